"""The schema changes only through Alembic, on SQLite and PostgreSQL alike."""

from __future__ import annotations

import asyncio
from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect
from sqlalchemy.engine import Connection

from db.base import Base
from db.engine import create_engine
from db.schema import SCHEMA_HEAD, current_revision
from migrations.commands import alembic_config, downgrade, upgrade


def _tables_and_revision(database_url: str) -> tuple[set[str], str | None]:
    async def read() -> tuple[set[str], str | None]:
        engine = create_engine(database_url)
        try:
            async with engine.connect() as connection:
                tables = await connection.run_sync(lambda c: set(inspect(c).get_table_names()))
            return tables, await current_revision(engine)
        finally:
            await engine.dispose()

    return asyncio.run(read())


def _differences(database_url: str) -> list[object]:
    def compare(connection: Connection) -> list[object]:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return list(compare_metadata(context, Base.metadata))

    async def run() -> list[object]:
        engine = create_engine(database_url)
        try:
            async with engine.connect() as connection:
                return await connection.run_sync(compare)
        finally:
            await engine.dispose()

    return asyncio.run(run())


def test_upgrade_downgrade_upgrade(database_url: str) -> None:
    upgrade(database_url)
    tables, revision = _tables_and_revision(database_url)
    assert revision == SCHEMA_HEAD
    assert {"api_keys", "usage_records"} <= tables

    downgrade(database_url, "base")
    tables, revision = _tables_and_revision(database_url)
    assert revision is None
    assert tables <= {"alembic_version"}

    upgrade(database_url)
    assert _tables_and_revision(database_url)[1] == SCHEMA_HEAD


def test_models_and_migrations_agree(database_url: str) -> None:
    upgrade(database_url)
    assert _differences(database_url) == []


def test_upgrade_creates_the_sqlite_folder(tmp_path: Path) -> None:
    """A fresh checkout has no ./var: `make run` migrates into it."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'fresh' / 'var' / 'gateway.db'}"
    upgrade(url)
    assert _tables_and_revision(url)[1] == SCHEMA_HEAD


def test_the_expected_head_is_alembics_head() -> None:
    """/readyz compares against SCHEMA_HEAD without importing Alembic: it must be the newest."""
    head = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
    assert head == SCHEMA_HEAD
