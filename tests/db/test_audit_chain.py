"""The audit hash chain: every writer's events are sealed in one sequence, concurrent sealers
never fork it, and `llm-gateway audit verify` names the first link an UPDATE or DELETE broke."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from db.audit_chain import seal, verify
from db.engine import create_engine, session_factory
from db.models import AuditEvent
from db.transactions import Insert, Operation, Transactions
from migrations.commands import upgrade
from server.cli import main

_AUDIT = (
    "INSERT INTO audit_events (created_at, actor_key_id, action, conversation_id, tool_call_id, "
    "tool_name, detail) VALUES (?, ?, ?, ?, ?, ?, ?)"
)


@pytest.fixture
async def sessions(database_url: str) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    await asyncio.to_thread(upgrade, database_url)
    engine = create_engine(database_url)
    try:
        yield session_factory(engine)
    finally:
        await engine.dispose()


async def _write(sessions: async_sessionmaker[AsyncSession], count: int, start: int = 0) -> None:
    """Events from both kinds of writer: ORM rows and the tool-call store's plain SQL."""
    async with sessions.begin() as session:
        for n in range(start, start + count):
            session.add(AuditEvent(actor_key_id=n, action="key.created", detail={"n": n}))

    def plain() -> Operation[None]:
        for n in range(start, start + count):
            at = datetime(2026, 11, 28, 12, 0, n % 60, 654321, tzinfo=UTC)
            row = (at, None, "tool_call.policy_checked", "c-1", f"t-{n}", "echo", {"k": [n, 0.5]})
            yield Insert(_AUDIT, row)
        return None

    bind = sessions.kw["bind"]
    await Transactions(bind).run(plain())


async def test_events_from_every_writer_are_sealed_in_one_intact_chain(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    await _write(sessions, 5)
    assert (await verify(sessions)).unsealed == 10

    assert await seal(sessions, batch=4) == 4
    assert await seal(sessions) == 6
    state = await verify(sessions)

    assert (state.intact, state.sealed, state.unsealed, state.head_seq) == (True, 10, 0, 10)


async def test_concurrent_sealers_never_fork_the_chain(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    for round_number in range(3):
        await _write(sessions, 10, start=round_number * 10)
        await asyncio.gather(*(seal(sessions, batch=7) for _ in range(4)))
    while await seal(sessions):
        pass
    state = await verify(sessions)

    assert (state.intact, state.sealed, state.unsealed) == (True, 60, 0)


async def test_an_update_breaks_the_chain_at_that_event(
    sessions: async_sessionmaker[AsyncSession], database_url: str
) -> None:
    await _write(sessions, 5)
    await seal(sessions)
    async with sessions.begin() as session:
        await session.execute(
            text("UPDATE audit_events SET detail = :d WHERE seq = 4"), {"d": '{"n": 99}'}
        )

    state = await verify(sessions)

    assert (state.broken_at, state.head_seq) == (4, 3)
    assert state.problem is not None
    assert "changed" in state.problem


async def test_a_deleted_event_is_a_missing_link(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    await _write(sessions, 5)
    await seal(sessions)
    async with sessions.begin() as session:
        await session.execute(text("DELETE FROM audit_events WHERE seq = 6"))

    state = await verify(sessions)

    assert (state.broken_at, state.problem) == (7, "events 6 to 6 are missing")


async def test_retention_removing_the_oldest_events_leaves_the_chain_intact(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    await _write(sessions, 5)
    await seal(sessions)
    async with sessions.begin() as session:
        await session.execute(text("DELETE FROM audit_events WHERE seq <= 3"))

    assert (await verify(sessions)).intact


def test_audit_verify_on_the_command_line_names_the_broken_link(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    upgrade(database_url)

    async def prepare() -> None:
        engine = create_engine(database_url)
        sessions = session_factory(engine)
        await _write(sessions, 3)
        await seal(sessions)
        async with sessions.begin() as session:
            await session.execute(text("UPDATE audit_events SET action = 'x' WHERE seq = 2"))
        await engine.dispose()

    asyncio.run(prepare())
    config = tmp_path / "gateway.yaml"
    config.write_text(f"database_url: {database_url}\n")

    code = main(["audit", "verify", "--config", str(config)])

    out = capsys.readouterr().out
    assert code == 1
    assert "BROKEN at seq 2" in out
