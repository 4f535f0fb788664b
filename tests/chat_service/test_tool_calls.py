"""A round's proposals and the model's message that asked for them are one transaction: they
land together, in the order a follower reads them, or not at all; the commit that starts a call
(the tool runs after it) is made durable on SQLite, whose other commits sync only at checkpoints
(``db.engine``)."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest
from sqlalchemy import event, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from chat_service.events import (
    MessageCompleted,
    ToolCallCreated,
    ToolCallStarted,
)
from chat_service.store import ConversationStore, completing
from chat_service.tool_call_view import CallState, ToolCallView, draft
from chat_service.tool_calls import Proposal, ToolCallStore
from chat_service.transitions import Approve, Decision, Hold, Identity, Start
from db.engine import create_engine, session_factory
from db.models import AuditEvent
from llm_service.types import AssistantMessage, ToolCall, UserMessage
from migrations.commands import upgrade
from tests.support.store import with_store

ASKED = AssistantMessage(
    None, tool_calls=(ToolCall("call_1", "get_time", {}), ToolCall("call_2", "transfer", {}))
)


def _draft(conversation_id: str, call: ToolCall) -> ToolCallView:
    return draft(
        conversation_id=conversation_id,
        call_id=call.id,
        round_number=0,
        tool_name=call.name,
        arguments=call.arguments,
        requested_by_key_id=1,
    )


STARTED = datetime(2026, 11, 27, 12, 0, 0, 123456, tzinfo=UTC)
LOCAL = Identity("local", "definition")
HOLD = Hold(identity=LOCAL, expires_at=STARTED, approvals_required=1)


def test_the_message_and_its_calls_are_stored_together_in_order(migrated: str) -> None:
    async def use(
        store: ConversationStore, sessions: async_sessionmaker[AsyncSession]
    ) -> tuple[list[str], list[str], list[CallState]]:
        conversation = await store.create(1, "mock", ["user"])
        assert await store.begin_turn(conversation.id, ["user"], UserMessage("go"))
        calls = ToolCallStore(sessions)
        first, second = (_draft(conversation.id, call) for call in ASKED.tool_calls)
        proposals = [Proposal(first), Proposal(second, [HOLD])]
        opened, views = await calls.propose(proposals, opening=completing(conversation.id, ASKED))
        assert isinstance(opened, MessageCompleted)
        assert opened.message.message == ASKED
        assert [[view.state for view in call] for call in views] == [
            [CallState.PROPOSED],
            [CallState.PROPOSED, CallState.AWAITING_APPROVAL],
        ]
        events = [event.type for _, event in await store.events(conversation.id, 0)]
        roles = [stored.message.role for stored in await store.messages(conversation.id)]
        stored = [call.state for call in await calls.for_conversation(conversation.id)]
        return events, roles, stored

    events, roles, stored = with_store(migrated, use)
    assert events == [
        "message.completed",  # the caller's
        "message.completed",  # the model's, asking for the calls
        "tool_call.created",
        "tool_call.created",
        "tool_call.awaiting_approval",
    ]
    assert roles == ["user", "assistant"]
    assert stored == [CallState.PROPOSED, CallState.AWAITING_APPROVAL]


def test_a_call_proposed_and_moved_at_once_reads_as_moved_one_by_one(migrated: str) -> None:
    # The moves policy decides at once are stored with the proposal in one insert: what it
    # returns, announces and audits is what the proposal and each move would have.
    async def use(
        store: ConversationStore, sessions: async_sessionmaker[AsyncSession]
    ) -> tuple[list[ToolCallView], list[tuple[str, dict[str, Any]]], list[str], ToolCallView]:
        conversation = await store.create(1, "mock", ["user"])
        calls = ToolCallStore(sessions)
        proposal = _draft(conversation.id, ASKED.tool_calls[0])
        moves = [Approve(identity=LOCAL), Start(at=STARTED)]
        _, [views] = await calls.propose([Proposal(proposal, moves)])
        stored = await calls.get(proposal.record_id)
        assert stored is not None
        events = [(event.type, event.data) for _, event in await store.events(conversation.id, 0)]
        actions = await _audited(sessions, proposal.record_id)
        return views, events, actions, stored

    views, events, actions, stored = with_store(migrated, use)
    proposed, approved, executing = views
    assert (proposed.state, proposed.server) == (CallState.PROPOSED, None)
    assert (approved.state, approved.server) == (CallState.APPROVED, "local")
    assert executing == stored
    assert (stored.state, stored.server, stored.started_at) == (
        CallState.EXECUTING,
        "local",
        STARTED,
    )
    assert events == [
        ("tool_call.created", ToolCallCreated(proposed).data),
        ("tool_call.started", ToolCallStarted(stored).data),
    ]
    assert actions == ["tool_call.proposed", "tool_call.approved", "tool_call.executing"]


def test_a_proposal_reads_back_as_drafted(migrated: str) -> None:
    async def use(
        store: ConversationStore, sessions: async_sessionmaker[AsyncSession]
    ) -> tuple[ToolCallView, ToolCallView | None]:
        conversation = await store.create(1, "mock", ["user"])
        calls = ToolCallStore(sessions)
        proposal = _draft(conversation.id, ToolCall("call_1", "get_time", {"zone": "UTC"}))
        await calls.propose([Proposal(proposal)])
        return proposal, await calls.get(proposal.record_id)

    proposal, stored = with_store(migrated, use)
    assert stored == proposal


async def _audited(sessions: async_sessionmaker[AsyncSession], record_id: str) -> list[str]:
    async with sessions() as session:
        rows = await session.scalars(
            select(AuditEvent.action)
            .where(AuditEvent.tool_call_id == record_id)
            .order_by(AuditEvent.id)
        )
        return list(rows)


def test_a_round_whose_proposals_fail_leaves_no_message_behind(migrated: str) -> None:
    async def use(
        store: ConversationStore, sessions: async_sessionmaker[AsyncSession]
    ) -> tuple[list[str], list[str], list[ToolCallView]]:
        conversation = await store.create(1, "mock", ["user"])
        assert await store.begin_turn(conversation.id, ["user"], UserMessage("go"))
        calls = ToolCallStore(sessions)
        first = _draft(conversation.id, ASKED.tool_calls[0])
        # The second proposal breaks the first's primary key: the transaction fails at its end.
        proposals = [Proposal(first), Proposal(first)]
        with pytest.raises((sqlite3.IntegrityError, asyncpg.UniqueViolationError)):
            await calls.propose(proposals, opening=completing(conversation.id, ASKED))
        events = [event.type for _, event in await store.events(conversation.id, 0)]
        roles = [stored.message.role for stored in await store.messages(conversation.id)]
        return events, roles, await calls.for_conversation(conversation.id)

    events, roles, stored = with_store(migrated, use)
    assert events == ["message.completed"]  # the caller's only
    assert roles == ["user"]
    assert stored == []


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

        statements.clear()
        held = _draft(conversation.id, ToolCall("held", "time__now", {}))
        await calls.propose([Proposal(held, then=[HOLD])])
        held_statements = list(statements)

        statements.clear()
        await calls.move(held.record_id, Approve(decision=Decision(2, STARTED)))
        await calls.move(held.record_id, Start(at=STARTED))
        started = list(statements)

        statements.clear()
        auto = _draft(conversation.id, ToolCall("auto", "time__now", {}))
        starting = [Approve(identity=LOCAL), Start(at=STARTED)]
        await calls.propose([Proposal(auto, then=starting)])
        auto_started = list(statements)
    finally:
        await engine.dispose()

    assert "PRAGMA synchronous=FULL" not in held_statements
    full = started.index("PRAGMA synchronous=FULL")
    assert "SET state = 'approved'" in " ".join(started[:full])  # the approval: not synced
    assert "SET state = 'executing'" in " ".join(started[full:])
    assert started[-1] == "PRAGMA synchronous=NORMAL"
    assert "PRAGMA synchronous=FULL" in auto_started
