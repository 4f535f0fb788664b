"""The shared base of catalogs that wrap another and keep database state fresh on every replica."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping

import structlog

from mcp_client.types import ServerHealth, ToolCatalog

log = structlog.get_logger("chat_service.refreshing_catalog")


class RefreshingCatalog(ToolCatalog):
    """Delegates lifecycle and health to ``inner`` and calls ``refresh`` at start and then every
    ``refresh_seconds``, so decisions taken on another replica arrive here too."""

    def __init__(self, inner: ToolCatalog, refresh_seconds: float, name: str) -> None:
        self._inner = inner
        self._refresh_seconds = refresh_seconds
        self._name = name
        self._task: asyncio.Task[None] | None = None

    async def refresh(self) -> None:
        raise NotImplementedError

    async def start(self) -> None:
        await self._inner.start()
        await self.refresh()
        self._task = asyncio.create_task(self._keep_fresh(), name=f"{self._name}-refresh")

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._inner.aclose()

    async def _keep_fresh(self) -> None:
        while True:
            await asyncio.sleep(self._refresh_seconds)
            try:
                await self.refresh()
            except Exception:  # a database hiccup must not end the refresher
                log.exception("catalog_refresh_failed", catalog=self._name)

    def status(self) -> Mapping[str, ServerHealth]:
        return self._inner.status()

    def bundle_names(self) -> list[str]:
        return self._inner.bundle_names()
