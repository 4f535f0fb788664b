"""Alembic environment: async engines for both SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import time
from collections.abc import Iterator
from pathlib import Path

from alembic import context
from sqlalchemy import text
from sqlalchemy.engine import Connection, make_url

import db.models
import db.usage_models  # noqa: F401
from db.base import Base, UTCDateTime
from db.engine import create_engine

target_metadata = Base.metadata


def _render_item(type_: str, obj: object, autogen_context: object) -> str | bool:
    # Migrations must not import application code: render our column types as plain SQLAlchemy.
    if type_ == "type" and isinstance(obj, UTCDateTime):
        return "sa.DateTime(timezone=True)"
    return False


def _configure_and_run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        render_item=_render_item,
    )
    postgresql = connection.dialect.name == "postgresql"
    if postgresql:
        # Two `migrate` runs at once (two operators, a Job retried beside its first pod): the
        # second waits here, then reads the version the first committed and does nothing. A
        # session lock, as some revisions commit part-way (CREATE INDEX CONCURRENTLY). Tried
        # between idle pauses, never awaited in a statement: CREATE INDEX CONCURRENTLY waits
        # for every open snapshot, a waiting `pg_advisory_lock` among them (a deadlock).
        lock = text("SELECT pg_try_advisory_lock(:key)")
        while not connection.execute(lock, {"key": MIGRATION_LOCK}).scalar():
            connection.commit()
            time.sleep(LOCK_RETRY_SECONDS)
        connection.commit()
    with context.begin_transaction():
        context.run_migrations()
    if postgresql:  # a run that fails releases the lock as its connection closes
        connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK})
        connection.commit()


# Any fixed 64-bit number, the same in every release: "llm-gateway migrate" -> one lock.
MIGRATION_LOCK = 0x6C6C6D2D6777
LOCK_RETRY_SECONDS = 0.5


@contextlib.contextmanager
def _sqlite_file_lock(url: str) -> Iterator[None]:
    """SQLite has no advisory locks: an exclusive lock on a file beside the database makes a
    second `migrate` wait for the first (whose version it then reads) instead of racing it."""
    database = make_url(url).database
    if make_url(url).get_backend_name() != "sqlite" or database in (None, "", ":memory:"):
        yield
        return
    with open(Path(f"{database}.migrate-lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


async def _run_online() -> None:
    url = context.config.get_main_option("sqlalchemy.url")
    assert url, "sqlalchemy.url is not set"
    # Our engine, so a new SQLite file is switched to WAL here, before the gateway and other
    # processes open it at once (switching needs a lock that busy_timeout does not wait for).
    engine = create_engine(url)
    with _sqlite_file_lock(url):
        async with engine.connect() as connection:
            await connection.run_sync(_configure_and_run)
    await engine.dispose()


if context.is_offline_mode():
    context.configure(
        url=context.config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
    )
    with context.begin_transaction():
        context.run_migrations()
else:
    asyncio.run(_run_online())
