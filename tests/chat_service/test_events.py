"""Turn events: stored and read back whole, in the wire shape callers have always seen."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from chat_service.errors import ErrorReport
from chat_service.events import (
    MessageCompleted,
    MessageDelta,
    ToolCallAwaitingApproval,
    ToolCallCompleted,
    ToolCallCreated,
    ToolCallStarted,
    TurnError,
    TurnEvent,
    TurnFinished,
    TurnStatus,
    stored_event,
    summarize,
)
from chat_service.messages import StoredMessage
from chat_service.store import ConversationStore
from chat_service.tool_call_view import CallState, ToolCallView
from llm_service.errors import UpstreamRateLimited
from llm_service.types import AssistantMessage, Thinking, ToolCall, UserMessage
from tests.support.store import with_store

AT = datetime(2026, 11, 23, 9, 30, tzinfo=UTC)
CALL = ToolCallView(
    record_id="6f1c0a52-0000-4000-8000-000000000001",
    conversation_id="c1",
    call_id="toolu_1",
    round=0,
    tool_name="transfer_money",
    server="local",
    arguments={"amount": 5},
    state=CallState.AWAITING_APPROVAL,
    requested_by_key_id=1,
    expires_at=AT,
    decided_by_key_id=None,
    decision_reason=None,
    policy_reason=None,
    result=None,
    result_is_error=False,
    created_at=AT,
    definition_hash="abc",
)
ANSWER = StoredMessage(
    7,
    AssistantMessage(
        "Paying.",
        (ToolCall("toolu_1", "transfer_money", {"amount": 5}),),
        (Thinking("plan", "sig"),),
    ),
    AT,
)
EVENTS: list[TurnEvent] = [
    MessageCompleted(StoredMessage(6, UserMessage("pay"), AT)),
    MessageCompleted(ANSWER),
    ToolCallCreated(CALL),
    ToolCallAwaitingApproval(CALL),
    ToolCallStarted(CALL),
    ToolCallCompleted(CALL),
    TurnError.of(
        UpstreamRateLimited("slow down", retry_after=7.0),
        ErrorReport(429, "rate_limit_error", "upstream_rate_limited"),
    ),
    TurnFinished(TurnStatus.FAILED),
]


async def _store_and_read(store: ConversationStore, _: Any) -> list[TurnEvent]:
    conversation = await store.create(1, "model", ["user"])
    for event in EVENTS:
        await store.add_event(conversation.id, event)
    return [event for _, event in await store.events(conversation.id, 0)]


def test_every_durable_event_round_trips_through_the_store(migrated: str) -> None:
    assert with_store(migrated, _store_and_read) == EVENTS


def test_the_wire_shape_is_the_one_callers_know() -> None:
    assert MessageDelta("Hel").data == {"text": "Hel"}
    assert not MessageDelta("Hel").durable
    assert MessageCompleted(ANSWER).data == {
        "message": {
            "id": 7,
            "role": "assistant",
            "content": "Paying.",
            "tool_calls": [
                {
                    "id": "toolu_1",
                    "name": "transfer_money",
                    "arguments": {"amount": 5},
                    "raw_arguments": None,
                    "cache_control": None,
                }
            ],
            "thinking": [{"text": "plan", "signature": "sig", "redacted": False, "model": None}],
            "cache_control": None,
            "created_at": "2026-11-23T09:30:00+00:00",
        }
    }
    call = ToolCallCreated(CALL).data["tool_call"]
    assert (call["record_id"], call["call_id"], call["tool"]) == (
        CALL.record_id,
        "toolu_1",
        "transfer_money",
    )
    assert call["state"] == "awaiting_approval"
    assert TurnFinished(TurnStatus.COMPLETED).data == {"status": "completed"}
    assert EVENTS[6].data == {
        "code": "upstream_rate_limited",
        "message": "slow down",
        "error_type": "rate_limit_error",
        "http_status": 429,
        "retry_after": 7.0,
    }


def test_events_stored_before_typed_events_still_load() -> None:
    old_message = {
        "message": {
            "id": 3,
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_1", "name": "get_time", "arguments": {}}],
            "created_at": "2026-11-20T10:00:00+00:00",
        }
    }
    completed = stored_event("message.completed", old_message)
    assert isinstance(completed, MessageCompleted)
    assert completed.message.message == AssistantMessage(
        tool_calls=(ToolCall("call_1", "get_time", {}),)
    )
    failed = stored_event("error", {"code": "max_tool_rounds", "message": "too many"})
    assert failed == TurnError("max_tool_rounds", "too many")
    assert failed.exception().report.status == 502


async def _events(*events: TurnEvent) -> Any:
    for event in events:
        yield event


async def test_a_summary_is_the_turns_end_its_messages_and_each_calls_last_state() -> None:
    approved = ToolCallStarted(replace(CALL, state=CallState.EXECUTING))
    summary = await summarize(
        _events(*EVENTS[:4], approved, MessageDelta("ignored"), TurnFinished(TurnStatus.COMPLETED))
    )

    assert summary.status is TurnStatus.COMPLETED
    assert [stored.id for stored in summary.messages] == [6, 7]
    assert summary.answer == "Paying."
    assert [call.state for call in summary.tool_calls.values()] == [CallState.EXECUTING]
    assert summary.error is None


async def test_a_failed_summary_keeps_the_error_as_it_was() -> None:
    summary = await summarize(_events(*EVENTS))
    assert summary.status is TurnStatus.FAILED
    assert summary.error is not None
    error = summary.error.exception()
    assert (error.report, error.retry_after) == (
        (429, "rate_limit_error", "upstream_rate_limited"),
        7.0,
    )
