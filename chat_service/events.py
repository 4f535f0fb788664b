"""Typed events of a turn, as streamed to callers and (all but deltas) persisted.

Each event is a frozen dataclass whose ``type`` names it on the wire. Its JSON payload (``data``)
is what a stream sends and what ``conversation_events`` stores; ``EVENTS`` reads it back.
"""

from __future__ import annotations

from collections.abc import AsyncIterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Annotated, Any, Literal, cast

from pydantic import Field, TypeAdapter

from chat_service.errors import ErrorReport, TurnFailed
from chat_service.messages import FlatStoredMessage, StoredMessage, Timestamp
from chat_service.tool_call_view import ToolCallView
from llm_service.errors import GatewayError
from llm_service.types import AssistantMessage


class TurnStatus(StrEnum):
    COMPLETED = "completed"
    AWAITING_APPROVAL = "awaiting_approval"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class _Event:
    @property
    def data(self) -> dict[str, Any]:
        """The JSON payload: what a stream sends after ``event: <type>``, and what is stored."""
        data: dict[str, Any] = EVENTS.dump_python(
            cast("TurnEvent", self), mode="json", by_alias=True
        )
        del data["type"]
        return data

    @property
    def durable(self) -> bool:
        return True


@dataclass(frozen=True, slots=True)
class MessageDelta(_Event):
    text: str
    type: Literal["message.delta"] = "message.delta"

    @property
    def durable(self) -> bool:
        """Text deltas are not stored: the completed message carries the same text."""
        return False


@dataclass(frozen=True, slots=True)
class MessageCompleted(_Event):
    message: FlatStoredMessage
    type: Literal["message.completed"] = "message.completed"


@dataclass(frozen=True, slots=True)
class _ToolCallEvent(_Event):
    tool_call: ToolCallView


@dataclass(frozen=True, slots=True)
class ToolCallCreated(_ToolCallEvent):
    type: Literal["tool_call.created"] = "tool_call.created"


@dataclass(frozen=True, slots=True)
class ToolCallAwaitingApproval(_ToolCallEvent):
    type: Literal["tool_call.awaiting_approval"] = "tool_call.awaiting_approval"


@dataclass(frozen=True, slots=True)
class ToolCallStarted(_ToolCallEvent):
    type: Literal["tool_call.started"] = "tool_call.started"


@dataclass(frozen=True, slots=True)
class ToolCallCompleted(_ToolCallEvent):
    type: Literal["tool_call.completed"] = "tool_call.completed"


@dataclass(frozen=True, slots=True)
class ToolCallProgress(_Event):
    """A running call's ``notifications/progress``, or its task's status change (then
    ``progress`` is null and ``task_status`` says where the task is)."""

    record_id: str
    tool: str
    progress: float | None
    total: float | None = None
    message: str | None = None
    task_status: str | None = None
    type: Literal["tool_call.progress"] = "tool_call.progress"


@dataclass(frozen=True, slots=True)
class ToolCallInputRequired(_Event):
    """The tool's server asks the conversation's caller for input (``elicitation/create``):
    answered at ``POST /v1/conversations/{id}/tool-calls/{record_id}/input`` before
    ``expires_at``, or declined."""

    record_id: str
    input_id: str
    tool: str
    message: str
    mode: Literal["form", "url"]
    requested_schema: dict[str, Any]
    url: str | None
    expires_at: Timestamp
    type: Literal["tool_call.input_required"] = "tool_call.input_required"


@dataclass(frozen=True, slots=True)
class ToolCallInputAnswered(_Event):
    """What the server was told: the caller's answer, or ``decline`` when none came in time
    (``expired``)."""

    record_id: str
    input_id: str
    action: Literal["accept", "decline", "cancel"]
    expired: bool = False
    type: Literal["tool_call.input_answered"] = "tool_call.input_answered"


@dataclass(frozen=True, slots=True)
class TurnError(_Event):
    """Why a turn failed, kept as the HTTP edge reports errors: a caller that waits on the turn
    answers with the same status, type, code and ``Retry-After`` (an upstream 429 stays a 429).
    A failure of the loop itself (round limit, timeout) is a 502 unless it says otherwise."""

    code: str
    message: str
    error_type: str = "upstream_error"
    http_status: int = 502
    retry_after: float | None = None
    type: Literal["error"] = "error"

    @classmethod
    def of(cls, error: GatewayError, report: ErrorReport) -> TurnError:
        """The event of ``error`` as the edge reports it (``report``)."""
        return cls(
            code=report.code or report.error_type,
            message=error.message,
            error_type=report.error_type,
            http_status=report.status,
            retry_after=error.retry_after,
        )

    def exception(self) -> TurnFailed:
        report = ErrorReport(self.http_status, self.error_type, self.code)
        return TurnFailed(self.message, report=report, retry_after=self.retry_after)


@dataclass(frozen=True, slots=True)
class TurnFinished(_Event):
    status: TurnStatus
    type: Literal["turn.finished"] = "turn.finished"


TurnEvent = (
    MessageDelta
    | MessageCompleted
    | ToolCallCreated
    | ToolCallAwaitingApproval
    | ToolCallStarted
    | ToolCallCompleted
    | ToolCallProgress
    | ToolCallInputRequired
    | ToolCallInputAnswered
    | TurnError
    | TurnFinished
)
EVENTS: TypeAdapter[TurnEvent] = TypeAdapter(Annotated[TurnEvent, Field(discriminator="type")])


@dataclass(frozen=True, slots=True)
class Stored:
    """An event already written, in the transaction of the move it reports (the executor's):
    whoever relays it must not store it again."""

    event: TurnEvent


def stored_event(kind: str, data: dict[str, Any]) -> TurnEvent:
    """An event read back from its stored ``type`` and payload."""
    return EVENTS.validate_python({**data, "type": kind})


@dataclass
class TurnSummary:
    """What a turn's events add up to: how it ended, its messages, each call's latest state."""

    status: TurnStatus = TurnStatus.FAILED  # a stream that stops without an ending failed
    messages: list[StoredMessage] = field(default_factory=list)
    tool_calls: dict[str, ToolCallView] = field(default_factory=dict)
    error: TurnError | None = None

    def add(self, event: TurnEvent) -> None:
        match event:
            case MessageCompleted(message=stored):
                self.messages.append(stored)
            case _ToolCallEvent(tool_call=call):
                self.tool_calls[call.record_id] = call
            case TurnError():
                self.error = event
            case TurnFinished(status=status):
                self.status = status

    @property
    def answer(self) -> str:
        """The last assistant text of the turn."""
        for stored in reversed(self.messages):
            if isinstance(stored.message, AssistantMessage):
                return stored.message.content or ""
        return ""

    def to_json(self, conversation_id: str) -> dict[str, Any]:
        return {
            "conversation_id": conversation_id,
            "status": self.status.value,
            "messages": [stored.to_json() for stored in self.messages],
            "tool_calls": [call.to_json() for call in self.tool_calls.values()],
            "error": self.error.data if self.error is not None else None,
        }


async def summarize(events: AsyncIterable[TurnEvent]) -> TurnSummary:
    summary = TurnSummary()
    async for event in events:
        summary.add(event)
    return summary
