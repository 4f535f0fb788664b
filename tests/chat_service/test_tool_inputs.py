"""Requests for input kept in the database: answered through one replica's store while another's
waits, single use, refused once expired or once the call ended."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from chat_service.errors import InputNotPending, InvalidInput
from chat_service.store import ConversationStore
from chat_service.tool_call_view import ToolCallView, draft
from chat_service.tool_calls import Proposal, ToolCallStore
from chat_service.tool_inputs import InputState, ToolInputs
from db.base import utcnow
from db.engine import create_engine, session_factory
from mcp_client.hooks import InputRequest
from tests.support.store import with_store

ASK = InputRequest(
    message="What is your name?",
    requested_schema={
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
    },
)


async def _call(store: ConversationStore, calls: ToolCallStore) -> ToolCallView:
    conversation = await store.create(1, "asker", ["user"])
    proposal = draft(
        conversation_id=conversation.id,
        call_id="call_1",
        round_number=0,
        tool_name="ask_name",
        arguments={},
        requested_by_key_id=1,
    )
    _, [(proposed,)] = await calls.propose([Proposal(proposal)])
    return proposed


def test_an_answer_taken_by_another_replica_reaches_the_waiting_one(migrated: str) -> None:
    async def use(store: ConversationStore, sessions: async_sessionmaker[AsyncSession]) -> None:
        calls = ToolCallStore(sessions)
        call = await _call(store, calls)
        running = ToolInputs(sessions, calls, poll_seconds=0.02)
        other_engine = create_engine(migrated)
        try:
            other_sessions = session_factory(other_engine)
            other = ToolInputs(other_sessions, ToolCallStore(other_sessions), poll_seconds=0.02)
            asked = await running.open(call, ASK, utcnow() + timedelta(seconds=30))
            waiting = asyncio.create_task(running.wait(asked))
            with pytest.raises(InvalidInput):
                await other.answer(call, 1, "accept", {"name": 7})
            await other.answer(call, 1, "accept", {"name": "Ana"})
            with pytest.raises(InputNotPending):  # single use
                await other.answer(call, 1, "decline", None)
            answered = await asyncio.wait_for(waiting, 10)
        finally:
            await other_engine.dispose()
        assert (answered.state, answered.action, answered.content) == (
            InputState.ACCEPT,
            "accept",
            {"name": "Ana"},
        )

    with_store(migrated, use)


def test_an_unanswered_request_expires_as_a_decline_and_refuses_a_late_answer(
    migrated: str,
) -> None:
    async def use(store: ConversationStore, sessions: async_sessionmaker[AsyncSession]) -> None:
        calls = ToolCallStore(sessions)
        call = await _call(store, calls)
        inputs = ToolInputs(sessions, calls, poll_seconds=0.02)
        asked = await inputs.open(call, ASK, utcnow() + timedelta(seconds=0.1))
        expired = await asyncio.wait_for(inputs.wait(asked), 10)
        assert (expired.state, expired.action) == (InputState.EXPIRED, "decline")
        with pytest.raises(InputNotPending):
            await inputs.answer(call, 1, "accept", {"name": "Ana"})

        await inputs.open(call, ASK, utcnow() + timedelta(seconds=30))
        await inputs.close(call.record_id)  # the call ended
        with pytest.raises(InputNotPending):
            await inputs.answer(call, 1, "decline", None)

    with_store(migrated, use)
