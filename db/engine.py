"""Engine construction: pool settings, SQLite pragmas, and the session factory."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.pool import ConnectionPoolEntry, PoolResetState

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///./var/gateway.db"


class PoolSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    size: int = Field(10, ge=1)
    max_overflow: int = Field(10, ge=0)
    # Well below any request deadline: a starved pool should fail fast, not hang callers.
    timeout_seconds: float = Field(5.0, gt=0)
    recycle_seconds: int = Field(1800, ge=60)
    # Check a connection before use when it has been back in the pool for at least
    # `pre_ping_idle_seconds` (HikariCP's "alive bypass window"): a ping is three round trips
    # with asyncpg, and under load connections come back within milliseconds; a pause is when
    # a failover or an idle timeout drops them. 0 checks at every checkout.
    pre_ping: bool = True
    pre_ping_idle_seconds: float = Field(1.0, ge=0)


def ensure_sqlite_directory(url: str) -> None:
    """SQLite creates the file but not its folder (``./var`` on a fresh checkout)."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)


def create_engine(
    url: str, pool: PoolSettings | None = None, clock: Callable[[], float] = time.monotonic
) -> AsyncEngine:
    pool = pool or PoolSettings()
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        ensure_sqlite_directory(url)
        # Rolled back on return only when a transaction is open (_roll_back_if_open).
        engine = create_async_engine(url, connect_args={"timeout": 30}, pool_reset_on_return=None)
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        event.listen(engine.sync_engine, "reset", _roll_back_if_open)
        return engine
    engine = create_async_engine(
        url,
        pool_size=pool.size,
        max_overflow=pool.max_overflow,
        pool_timeout=pool.timeout_seconds,
        pool_recycle=pool.recycle_seconds,
    )
    if pool.pre_ping:
        _ping_idle_connections(engine, pool.pre_ping_idle_seconds, clock)
    return engine


_RETURNED_AT = "llm_gateway_returned_at"


def _ping_idle_connections(
    engine: AsyncEngine, idle_seconds: float, clock: Callable[[], float]
) -> None:
    """SQLAlchemy's ``pool_pre_ping`` checks every checkout; this, those idle for a while. A
    connection that fails its check is replaced (the pool retries on ``DisconnectionError``)."""

    def returned(_: Any, record: ConnectionPoolEntry) -> None:
        record.info[_RETURNED_AT] = clock()

    def checked_out(dbapi_connection: Any, record: ConnectionPoolEntry, _: Any) -> None:
        returned_at = record.info.get(_RETURNED_AT)
        if returned_at is None or clock() - returned_at < idle_seconds:
            return  # new, or in use moments ago
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:
            raise DisconnectionError("the pooled connection failed its check") from exc

    event.listen(engine.sync_engine, "checkin", returned)
    event.listen(engine.sync_engine, "checkout", checked_out)


def _roll_back_if_open(
    dbapi_connection: Any, _: ConnectionPoolEntry, state: PoolResetState
) -> None:
    """SQLite's reset on return. SQLAlchemy's default rolls back every connection coming back,
    a hand-off to aiosqlite's thread even when nothing is open, as after the driver path's
    commits and reads (db/transactions.py); the ORM's sessions end their own transactions."""
    if (
        state.asyncio_safe
        and not state.transaction_was_reset
        and dbapi_connection._connection.in_transaction
    ):
        dbapi_connection.rollback()


def _sqlite_pragmas(dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
    # WAL lets readers proceed during writes; busy_timeout makes writers queue, not fail.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA busy_timeout=30000")
    # Switching the journal mode needs a lock; once the file is in WAL mode it stays there.
    cursor.execute("PRAGMA journal_mode")
    if cursor.fetchone()[0].lower() != "wal":
        cursor.execute("PRAGMA journal_mode=WAL")
    # In WAL mode, NORMAL syncs the log at checkpoints rather than at every commit (SQLite's
    # advice for WAL, Rails' default): a commit survives the process dying, and the file is
    # never corrupted, but the last commits before a power loss or OS crash may be undone. A
    # transaction after which something happens outside the database (a tool call starts) is
    # committed with FULL (``Transactions.run(durable=True)``), making it and all before it
    # durable. Each commit's fsync was half a conversation turn's time (docs/performance.md).
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)
