"""Fixed-window counters in the gateway's database, so every replica and worker on it shares them.

Budgets use them when there is no Redis (``redis_url`` unset): a budget must hold across the
workers of one host and across replicas, and the database is the one store they all share. Each
increment is one ``INSERT ... ON CONFLICT DO UPDATE ... RETURNING`` statement, atomic on
PostgreSQL and on SQLite (whose writes are serialized); a hold adds ``WHERE value < limit``, so
the increment is also the check.
Only keys with a budget pay this round trip; a key without one never reaches it.

A counter's window is in its name, so an expired row is never read again: rows past their
``expires_at`` are deleted at most once per ``sweep_seconds`` by the replica that next writes.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import delete, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from accounts.limits.counters import CountersUnavailable
from db.models import LimitCounter


class DatabaseCounters:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        dialect: str,
        clock: Callable[[], float] = time.time,
        sweep_seconds: float = 3600.0,
    ) -> None:
        self._sessions = sessions
        self._dialect = dialect
        self._clock = clock
        self._sweep_seconds = sweep_seconds
        self._next_sweep = 0.0

    async def add(self, key: str, amount: float, ttl_seconds: int) -> float:
        value = await self._upsert(key, amount, ttl_seconds, None)
        assert value is not None  # no limit: the statement always returns the row
        return value

    async def hold(self, key: str, amount: float, limit: float, ttl_seconds: int) -> float | None:
        if limit <= 0:  # an absent counter reads 0: already at a limit of 0
            return None
        return await self._upsert(key, amount, ttl_seconds, limit)

    async def _upsert(
        self, key: str, amount: float, ttl_seconds: int, below: float | None
    ) -> float | None:
        """One ``INSERT ... ON CONFLICT DO UPDATE [WHERE value < below] RETURNING``: no row
        returned when the counter is at ``below`` already (nothing added)."""
        now = self._clock()
        row = {"name": key, "value": amount, "expires_at": now + ttl_seconds}
        insert = postgresql.insert if self._dialect == "postgresql" else sqlite.insert
        statement = (
            insert(LimitCounter)
            .values(row)
            .on_conflict_do_update(
                index_elements=[LimitCounter.name],
                set_={"value": LimitCounter.value + amount},
                where=None if below is None else LimitCounter.value < below,
            )
            .returning(LimitCounter.value)
        )
        try:
            async with self._sessions.begin() as session:
                value = (await session.execute(statement)).scalar_one_or_none()
                if now >= self._next_sweep:
                    self._next_sweep = now + self._sweep_seconds
                    await session.execute(
                        delete(LimitCounter).where(LimitCounter.expires_at <= now)
                    )
        except (SQLAlchemyError, OSError) as exc:
            raise CountersUnavailable(f"database: {type(exc).__name__}") from exc
        return None if value is None else float(value)

    async def get(self, key: str) -> float:
        table = LimitCounter.__table__
        query = select(table.c.value).where(table.c.name == key, table.c.expires_at > self._clock())
        try:
            async with self._sessions() as session:
                value = (await session.execute(query)).scalar_one_or_none()
        except (SQLAlchemyError, OSError) as exc:
            raise CountersUnavailable(f"database: {type(exc).__name__}") from exc
        return float(value) if value is not None else 0.0

    async def aclose(self) -> None:
        return None
