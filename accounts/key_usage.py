"""When each key was last used: noted in memory per request, written at most once a minute.

The request path only compares two floats; a background task writes the keys used since its last
write in one UPDATE per batch. So ``last_used_at`` is accurate to about a minute (plus the write
interval), which is what an operator asks of it ("is this key still in use?").
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime

import structlog
from sqlalchemy import update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from db.base import utcnow
from db.cancellation import raise_if_cancelled
from db.models import ApiKey

log = structlog.get_logger("accounts.key_usage")
NOTE_EVERY_SECONDS = 60.0
WRITE_EVERY_SECONDS = 15.0
_LIMIT = 100_000


class LastUsed:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions
        self._noted: dict[int, float] = {}  # key id -> (monotonic) when last noted
        self._pending: dict[int, datetime] = {}
        self._task: asyncio.Task[None] | None = None

    def touch(self, key_id: int, now: float) -> None:
        """``now`` on the caller's monotonic clock."""
        if now - self._noted.get(key_id, -NOTE_EVERY_SECONDS) < NOTE_EVERY_SECONDS:
            return
        if len(self._noted) >= _LIMIT:
            self._noted.clear()
        self._noted[key_id] = now
        self._pending[key_id] = utcnow()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="key-last-used")

    async def flush(self) -> None:
        if not self._pending:
            return
        pending, self._pending = self._pending, {}
        try:
            async with self._sessions.begin() as session:
                for key_id, when in sorted(pending.items()):
                    await session.execute(
                        update(ApiKey).where(ApiKey.id == key_id).values(last_used_at=when)
                    )
        except SQLAlchemyError as exc:
            # Worth a retry, not a crash: the next use is noted within a minute anyway.
            self._pending = {**pending, **self._pending}
            raise_if_cancelled()
            log.warning("last_used_write_failed", keys=len(pending), error=str(exc))

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.flush()

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(WRITE_EVERY_SECONDS)
            await self.flush()
