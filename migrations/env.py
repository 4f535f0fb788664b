"""Alembic environment: async engines for both SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy.engine import Connection

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
    with context.begin_transaction():
        context.run_migrations()


async def _run_online() -> None:
    url = context.config.get_main_option("sqlalchemy.url")
    assert url, "sqlalchemy.url is not set"
    # Our engine, so a new SQLite file is switched to WAL here, before the gateway and other
    # processes open it at once (switching needs a lock that busy_timeout does not wait for).
    engine = create_engine(url)
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
