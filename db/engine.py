"""Engine construction: pool settings, SQLite pragmas, and the session factory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.pool import ConnectionPoolEntry

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///./var/gateway.db"


class PoolSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    size: int = Field(10, ge=1)
    max_overflow: int = Field(10, ge=0)
    # Well below any request deadline: a starved pool should fail fast, not hang callers.
    timeout_seconds: float = Field(5.0, gt=0)
    recycle_seconds: int = Field(1800, ge=60)
    pre_ping: bool = True


def ensure_sqlite_directory(url: str) -> None:
    """SQLite creates the file but not its folder (``./var`` on a fresh checkout)."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)


def create_engine(url: str, pool: PoolSettings | None = None) -> AsyncEngine:
    pool = pool or PoolSettings()
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        ensure_sqlite_directory(url)
        engine = create_async_engine(url, connect_args={"timeout": 30})
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        return engine
    return create_async_engine(
        url,
        pool_size=pool.size,
        max_overflow=pool.max_overflow,
        pool_timeout=pool.timeout_seconds,
        pool_recycle=pool.recycle_seconds,
        pool_pre_ping=pool.pre_ping,
    )


def _sqlite_pragmas(dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
    # WAL lets readers proceed during writes; busy_timeout makes writers queue, not fail.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA busy_timeout=30000")
    # Switching the journal mode needs a lock; once the file is in WAL mode it stays there.
    cursor.execute("PRAGMA journal_mode")
    if cursor.fetchone()[0].lower() != "wal":
        cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)
