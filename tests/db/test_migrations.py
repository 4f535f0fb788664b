"""The schema changes only through Alembic, on SQLite and PostgreSQL alike."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import JSON, DateTime, Executable, column, insert, inspect, select, table
from sqlalchemy.engine import Connection

import db.usage_models  # noqa: F401 - the metadata compared holds every table
from db.base import Base
from db.engine import create_engine
from db.models import ConversationMessage
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


_CONVERSATIONS = table(
    "conversations",
    column("id"),
    column("api_key_id"),
    column("model"),
    column("roles", JSON),
    column("status"),
    column("created_at", DateTime(timezone=True)),
    column("updated_at", DateTime(timezone=True)),
)
_EVENTS = table(
    "conversation_events",
    column("id"),
    column("conversation_id"),
    column("type"),
    column("data", JSON),
    column("created_at", DateTime(timezone=True)),
)
_MESSAGES = table("conversation_messages", column("role"), column("content"))
_OLD_CALL = {"id": "row-1", "call_id": "call_1", "tool": "get_time", "state": "proposed"}


def _run(database_url: str, statement: Executable) -> list[Any]:
    async def go() -> list[Any]:
        engine = create_engine(database_url)
        try:
            async with engine.begin() as connection:
                result = await connection.execute(statement)
                return list(result.all()) if result.returns_rows else []
        finally:
            await engine.dispose()

    return asyncio.run(go())


def test_0008_renames_stored_tool_call_ids_and_downgrades_whole_messages(
    database_url: str,
) -> None:
    upgrade(database_url, "0007")
    now = datetime.now(UTC)
    _run(
        database_url,
        _CONVERSATIONS.insert().values(
            id="c1",
            api_key_id=1,
            model="m",
            roles=[],
            status="idle",
            created_at=now,
            updated_at=now,
        ),
    )
    _run(
        database_url,
        _EVENTS.insert().values(
            conversation_id="c1",
            type="tool_call.created",
            data={"tool_call": _OLD_CALL},
            created_at=now,
        ),
    )

    upgrade(database_url)
    [(data,)] = _run(database_url, select(_EVENTS.c.data))
    renamed = {"record_id": "row-1", "call_id": "call_1", "tool": "get_time", "state": "proposed"}
    assert data == {"tool_call": renamed}
    image = {"type": "image", "url": "data:image/png;base64,iVBOR", "detail": None}
    whole = {"role": "user", "content": [{"type": "text", "text": "look"}, image]}
    _run(
        database_url,
        insert(ConversationMessage).values(
            conversation_id="c1", role="user", message=whole, is_error=False, created_at=now
        ),
    )

    downgrade(database_url, "0007")
    [(data,)] = _run(database_url, select(_EVENTS.c.data))
    assert data == {"tool_call": _OLD_CALL}
    [(role, content)] = _run(database_url, select(_MESSAGES.c.role, _MESSAGES.c.content))
    assert (role, content) == ("user", "look")
