"""A tool call as the gateway holds it: its states, its row as read, and its JSON.

proposed -> denied_by_policy | awaiting_approval | approved
awaiting_approval -> approved | rejected | expired | denied_by_policy (refused at approval)
approved -> denied_by_policy (refused just before running) | executing
executing -> succeeded | failed | timed_out | unknown_outcome
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import Field, TypeAdapter

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


SETTLED = frozenset(
    {
        CallState.DENIED_BY_POLICY,
        CallState.REJECTED,
        CallState.EXPIRED,
        CallState.SUCCEEDED,
        CallState.FAILED,
        CallState.TIMED_OUT,
        CallState.UNKNOWN_OUTCOME,
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
    return view_of(tuple(getattr(row, name) for name in _VIEW_FIELDS))


# The ORM's attribute names are the columns' names.
_VIEW_FIELDS = tuple(name.strip() for name in VIEW_COLUMNS.split(","))


APPROVAL_MARKS: TypeAdapter[tuple[ApprovalMark, ...]] = TypeAdapter(tuple[ApprovalMark, ...])


def view_of(row: Sequence[Any]) -> ToolCallView:
    """A row of ``tool_call_sql.VIEW_COLUMNS``, from either database."""
    return ToolCallView(
        record_id=row[0],
        conversation_id=row[1],
        call_id=row[2],
        round=row[3],
        tool_name=row[4],
        server=row[5],
        arguments=json_of(row[6]),
        state=CallState(row[7]),
        requested_by_key_id=row[8],
        expires_at=_time(row[9]),
        decided_by_key_id=row[10],
        decision_reason=row[11],
        policy_reason=row[12],
        result=row[13],
        result_is_error=bool(row[14]),
        created_at=utc(row[15]),
        definition_hash=row[16],
        decided_at=_time(row[17]),
        started_at=_time(row[18]),
        finished_at=_time(row[19]),
        approvals_required=row[20],
        approvals=APPROVAL_MARKS.validate_python(json_of(row[21]) or []),
    )


def moved(view: ToolCallView, new: CallState, changes: Mapping[str, Any]) -> ToolCallView:
    """The call as a move to ``new`` setting ``changes`` (``tool_calls.Move``) leaves its row,
    read back: for a move whose compare-and-set cannot lose (on a call being proposed)."""
    fields: dict[str, Any] = {"state": new}
    for column, value in changes.items():
        if column == "approvals":
            fields[column] = APPROVAL_MARKS.validate_python(value)
        elif column != "approval_count":  # the view has the approvals themselves
            fields[column] = value
    return replace(view, **fields)


def _time(value: Any) -> datetime | None:
    return None if value is None else utc(value)


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
        tool_name=tool_name,
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
