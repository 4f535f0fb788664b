"""A tool call as the gateway holds it: its states and the edges between them (``EDGES``, the
whole state machine), its row as read, and its JSON. Each edge is one typed transition in
``chat_service.transitions``; nothing else moves a call.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, cast

from pydantic import Field, TypeAdapter
from sqlalchemy import String

from chat_service.messages import Timestamp
from chat_service.tool_call_sql import VIEW_COLUMNS
from db.base import utcnow
from db.models import ToolCallRecord
from db.transactions import json_of, utc


class CallState(StrEnum):
    PROPOSED = "proposed"
    DENIED_BY_POLICY = "denied_by_policy"
    AWAITING_APPROVAL = "awaiting_approval"
    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"
    EXECUTING = "executing"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    UNKNOWN_OUTCOME = "unknown_outcome"
    CANCELLED = "cancelled"


class Edge(StrEnum):
    """What may happen to a call; each is one transition (``chat_service.transitions``)."""

    DENY = "deny"  # policy refused it: at proposal, at approval or just before it runs
    HOLD = "hold"  # it waits for a human's approval
    APPROVE = "approve"  # by policy at proposal, or by the last approver it needs
    REJECT = "reject"
    EXPIRE = "expire"  # no decision in time
    START = "start"  # the one move that lets it run: at most once, whichever replica wins
    SETTLE = "settle"  # it ran: succeeded, or failed (an error result)
    TIME_OUT = "time_out"
    LOSE = "lose"  # the process running it died: its outcome is unknown
    CANCEL = "cancel"  # its MCP client cancelled the task before it ran (tasks/cancel)


@dataclass(frozen=True, slots=True)
class EdgeSpec:
    sources: frozenset[CallState]
    targets: frozenset[CallState]


def _edge(sources: set[CallState], targets: set[CallState]) -> EdgeSpec:
    return EdgeSpec(frozenset(sources), frozenset(targets))


_S = CallState
# The state machine, whole: each edge, the states it leaves and the states it enters.
EDGES: Mapping[Edge, EdgeSpec] = {
    Edge.DENY: _edge({_S.PROPOSED, _S.AWAITING_APPROVAL, _S.APPROVED}, {_S.DENIED_BY_POLICY}),
    Edge.HOLD: _edge({_S.PROPOSED}, {_S.AWAITING_APPROVAL}),
    Edge.APPROVE: _edge({_S.PROPOSED, _S.AWAITING_APPROVAL}, {_S.APPROVED}),
    Edge.REJECT: _edge({_S.AWAITING_APPROVAL}, {_S.REJECTED}),
    Edge.EXPIRE: _edge({_S.AWAITING_APPROVAL}, {_S.EXPIRED}),
    Edge.START: _edge({_S.APPROVED}, {_S.EXECUTING}),
    Edge.SETTLE: _edge({_S.EXECUTING}, {_S.SUCCEEDED, _S.FAILED}),
    Edge.TIME_OUT: _edge({_S.EXECUTING}, {_S.TIMED_OUT}),
    Edge.LOSE: _edge({_S.EXECUTING}, {_S.UNKNOWN_OUTCOME}),
    Edge.CANCEL: _edge({_S.AWAITING_APPROVAL, _S.APPROVED}, {_S.CANCELLED}),
}


SETTLED = frozenset(
    {
        CallState.DENIED_BY_POLICY,
        CallState.REJECTED,
        CallState.EXPIRED,
        CallState.SUCCEEDED,
        CallState.FAILED,
        CallState.TIMED_OUT,
        CallState.UNKNOWN_OUTCOME,
        CallState.CANCELLED,
    }
)


def arguments_hash(arguments: dict[str, Any]) -> str:
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class ApprovalMark:
    """One person's approval of a call that needs more than one."""

    key_id: int
    owner: str | None  # the approving key's owner: two approvals need two owners
    at: Timestamp
    comment: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCallView:
    """One tool-call row. ``record_id`` is ours (the row's id: approvals, audit and the admin UI
    name calls by it); ``call_id`` is the id the model gave the call (tool results answer it)."""

    record_id: str
    conversation_id: str
    call_id: str
    round: int
    tool_name: Annotated[str, Field(alias="tool")]
    server: str | None
    arguments: dict[str, Any]
    state: CallState
    requested_by_key_id: int
    expires_at: Timestamp | None
    decided_by_key_id: int | None
    decision_reason: str | None
    policy_reason: str | None
    result: str | None
    result_is_error: bool
    created_at: Timestamp
    definition_hash: str | None = None
    decided_at: Timestamp | None = None
    started_at: Timestamp | None = None
    finished_at: Timestamp | None = None
    approvals_required: int = 1
    approvals: tuple[ApprovalMark, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = TOOL_CALL.dump_python(self, mode="json", by_alias=True)
        return data


# The JSON of a tool call, in the API and in persisted `tool_call.*` events.
TOOL_CALL: TypeAdapter[ToolCallView] = TypeAdapter(ToolCallView)


def call_view(row: ToolCallRecord) -> ToolCallView:
    """The view of an ORM row (the admin queue reads rows that way)."""
    return view_of({name: getattr(row, name) for name in VIEW_FIELDS})


# The columns a view reads, by name (the ORM's attribute names are the columns' names).
VIEW_FIELDS = tuple(name.strip() for name in VIEW_COLUMNS.split(","))


APPROVAL_MARKS: TypeAdapter[tuple[ApprovalMark, ...]] = TypeAdapter(tuple[ApprovalMark, ...])


def view_of(row: Mapping[str, Any]) -> ToolCallView:
    """A row of ``tool_call_sql.VIEW_COLUMNS`` by column name, from either database (a driver
    row: ``named(row)``) or the ORM (``call_view``)."""
    return ToolCallView(
        record_id=row["id"],
        conversation_id=row["conversation_id"],
        call_id=row["call_id"],
        round=row["round"],
        tool_name=row["tool_name"],
        server=row["server"],
        arguments=json_of(row["arguments"]),
        state=CallState(row["state"]),
        requested_by_key_id=row["requested_by_key_id"],
        expires_at=_time(row["expires_at"]),
        decided_by_key_id=row["decided_by_key_id"],
        decision_reason=row["decision_reason"],
        policy_reason=row["policy_reason"],
        result=row["result"],
        result_is_error=bool(row["result_is_error"]),
        created_at=utc(row["created_at"]),
        definition_hash=row["definition_hash"],
        decided_at=_time(row["decided_at"]),
        started_at=_time(row["started_at"]),
        finished_at=_time(row["finished_at"]),
        approvals_required=row["approvals_required"],
        approvals=APPROVAL_MARKS.validate_python(json_of(row["approvals"]) or []),
    )


def named(row: Sequence[Any]) -> ToolCallView:
    """The view of a driver's row of ``VIEW_COLUMNS`` (a tuple, in that order)."""
    return view_of(dict(zip(VIEW_FIELDS, row, strict=True)))


def _time(value: Any) -> datetime | None:
    return None if value is None else utc(value)


# A model can name a tool at any length; no tool's name is longer than the column (MCP asks for
# at most 128 characters), so a longer one names none and is stored cut, to be denied as unknown.
_TOOL_NAME_LENGTH = cast(String, ToolCallRecord.__table__.c.tool_name.type).length


def draft(
    *,
    conversation_id: str,
    call_id: str,
    round_number: int,
    tool_name: str,
    arguments: dict[str, Any],
    requested_by_key_id: int,
) -> ToolCallView:
    """A call about to be proposed, as its row will read once ``ToolCallStore.propose`` has
    stored it: policy can judge it (and audit the judgement) in the proposal's transaction."""
    return ToolCallView(
        record_id=str(uuid.uuid4()),
        conversation_id=conversation_id,
        call_id=call_id,
        round=round_number,
        tool_name=tool_name[:_TOOL_NAME_LENGTH],
        server=None,
        arguments=arguments,
        state=CallState.PROPOSED,
        requested_by_key_id=requested_by_key_id,
        expires_at=None,
        decided_by_key_id=None,
        decision_reason=None,
        policy_reason=None,
        result=None,
        result_is_error=False,
        created_at=utcnow(),
    )
