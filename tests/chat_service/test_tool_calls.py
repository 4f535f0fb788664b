"""The tool-call store's commits: the one that starts a call (the tool runs after it) is made
durable on SQLite, whose other commits sync only at checkpoints (``db.engine``)."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import event

from chat_service.store import ConversationStore
from chat_service.tool_call_view import CallState, draft
from chat_service.tool_calls import Move, ToolCallStore
from db.engine import create_engine, session_factory
from migrations.commands import upgrade


async def test_only_the_commit_that_starts_a_call_is_synced_at_full(sqlite_url: str) -> None:
    await asyncio.to_thread(upgrade, sqlite_url)
    engine = create_engine(sqlite_url)
    statements: list[str] = []

    @event.listens_for(engine.sync_engine, "connect")
    def trace(dbapi_connection: Any, _: Any) -> None:
        dbapi_connection.driver_connection._conn.set_trace_callback(statements.append)

    try:
        sessions = session_factory(engine)
        calls = ToolCallStore(sessions)
        conversation = await ConversationStore(sessions).create(1, "mock", ["user"])

        def proposal(call_id: str) -> Any:
            return draft(
                conversation_id=conversation.id,
                call_id=call_id,
                round_number=0,
                tool_name="time__now",
                arguments={},
                requested_by_key_id=1,
            )

        statements.clear()
        held = proposal("held")
        await calls.propose(held, then=[Move(CallState.PROPOSED, CallState.AWAITING_APPROVAL)])
        held_statements = list(statements)

        statements.clear()
        await calls.move(held.record_id, Move(CallState.AWAITING_APPROVAL, CallState.APPROVED))
        await calls.move(held.record_id, Move(CallState.APPROVED, CallState.EXECUTING))
        started = list(statements)

        statements.clear()
        auto = proposal("auto")
        await calls.propose(
            auto,
            then=[
                Move(CallState.PROPOSED, CallState.APPROVED),
                Move(CallState.APPROVED, CallState.EXECUTING),
            ],
        )
        auto_started = list(statements)
    finally:
        await engine.dispose()

    assert "PRAGMA synchronous=FULL" not in held_statements
    full = started.index("PRAGMA synchronous=FULL")
    assert "SET state = 'approved'" in " ".join(started[:full])  # the approval: not synced
    assert "SET state = 'executing'" in " ".join(started[full:])
    assert started[-1] == "PRAGMA synchronous=NORMAL"
    assert "PRAGMA synchronous=FULL" in auto_started
