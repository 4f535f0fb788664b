"""Re-reads database-backed state on a timer, so decisions taken on another replica arrive here."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import structlog

from db.cancellation import raise_if_cancelled

log = structlog.get_logger("db.refresher")


class Refresher:
    """Calls ``refresh`` every ``seconds`` from ``start`` until ``aclose``.

    The first refresh is the owner's to make (at start, before anything is served); this only
    keeps the state fresh afterwards.
    """

    def __init__(self, name: str, refresh: Callable[[], Awaitable[None]], seconds: float) -> None:
        self._name = name
        self._refresh = refresh
        self._seconds = seconds
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._keep_fresh(), name=f"{self._name}-refresh")

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _keep_fresh(self) -> None:
        while True:
            await asyncio.sleep(self._seconds)
            try:
                await self._refresh()
            except Exception:  # a database hiccup must not end the refresher
                raise_if_cancelled()
                log.exception("catalog_refresh_failed", catalog=self._name)
