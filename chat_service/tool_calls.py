"""Tool-call rows and their state machine. Every move is a compare-and-set in the database.

proposed -> denied_by_policy | awaiting_approval | approved
awaiting_approval -> approved | rejected | expired | denied_by_policy (refused at approval)
approved -> denied_by_policy (refused just before running) | executing
executing -> succeeded | failed | timed_out | unknown_outcome
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Protocol

from pydantic import Field, TypeAdapter
from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from chat_service.messages import Timestamp, message_row
from db.base import utcnow
from db.models import AuditEvent, ConversationEvent, ToolCallRecord
from llm_service.types import ToolResultMessage


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
    return ToolCallView(
        record_id=row.id,
        conversation_id=row.conversation_id,
        call_id=row.call_id,
        round=row.round,
        tool_name=row.tool_name,
        server=row.server,
        arguments=row.arguments,
        state=CallState(row.state),
        requested_by_key_id=row.requested_by_key_id,
        expires_at=row.expires_at,
        decided_by_key_id=row.decided_by_key_id,
        decision_reason=row.decision_reason,
        policy_reason=row.policy_reason,
        result=row.result,
        result_is_error=row.result_is_error,
        created_at=row.created_at,
        definition_hash=row.definition_hash,
        decided_at=row.decided_at,
        started_at=row.started_at,
        finished_at=row.finished_at,
        approvals_required=row.approvals_required,
        approvals=_MARKS.validate_python(row.approvals or []),
    )


_MARKS: TypeAdapter[tuple[ApprovalMark, ...]] = TypeAdapter(tuple[ApprovalMark, ...])


# Told of every state a call enters (for metrics).
MoveObserver = Callable[[ToolCallView], None]


class Announcement(Protocol):
    """A durable turn event (``chat_service.events``), as the store writes it."""

    @property
    def type(self) -> str: ...

    @property
    def data(self) -> dict[str, Any]: ...


# The event that reports a call's new state, written in the transaction of the move (or the
# proposal): one commit instead of two, and a follower never sees the state without its event.
Announce = Callable[[ToolCallView], Announcement]


def _event_row(view: ToolCallView, announce: Announce) -> ConversationEvent:
    event = announce(view)
    return ConversationEvent(conversation_id=view.conversation_id, type=event.type, data=event.data)


@dataclass(frozen=True, slots=True)
class PendingAudit:
    """An audit row of something that happened to a call (e.g. a policy check), written in the
    transaction of the move it led to: one commit instead of two."""

    call: ToolCallView
    action: str
    actor_key_id: int | None
    detail: dict[str, Any]
    at: datetime = field(default_factory=utcnow)

    def row(self) -> AuditEvent:
        return AuditEvent(
            created_at=self.at,
            actor_key_id=self.actor_key_id,
            action=f"tool_call.{self.action}",
            conversation_id=self.call.conversation_id,
            tool_call_id=self.call.record_id,
            tool_name=self.call.tool_name,
            detail=self.detail,
        )


class ToolCallStore:
    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], on_move: MoveObserver | None = None
    ) -> None:
        self._sessions = sessions
        self._on_move = on_move

    async def propose(
        self,
        *,
        conversation_id: str,
        call_id: str,
        round_number: int,
        tool_name: str,
        arguments: dict[str, Any],
        requested_by_key_id: int,
        announce: Announce | None = None,
    ) -> ToolCallView:
        row = ToolCallRecord(
            id=str(uuid.uuid4()),
            conversation_id=conversation_id,
            call_id=call_id,
            round=round_number,
            tool_name=tool_name,
            arguments=arguments,
            arguments_hash=arguments_hash(arguments),
            state=CallState.PROPOSED.value,
            requested_by_key_id=requested_by_key_id,
        )
        async with self._sessions.begin() as session:
            session.add(row)
            session.add(_audit(row, "proposed", requested_by_key_id, {"arguments": arguments}))
            if announce is not None:
                await session.flush()  # the row's defaults, for the event's view of it
                session.add(_event_row(call_view(row), announce))
        return self._moved(call_view(row))

    def _moved(self, view: ToolCallView) -> ToolCallView:
        if self._on_move is not None:
            self._on_move(view)
        return view

    async def move(
        self,
        record_id: str,
        expected: CallState,
        new: CallState,
        *,
        actor_key_id: int | None = None,
        result_message: ToolResultMessage | None = None,
        changes: dict[str, Any] | None = None,
        prior: PendingAudit | None = None,
        announce: Announce | None = None,
    ) -> ToolCallView | None:
        """Compare-and-set: returns the updated call, or None when another move won.

        ``result_message`` is appended to the conversation in the same transaction, so a settled
        call always has exactly one result in the history the model sees. ``prior``: what led to
        the move, audited first in the same transaction (even when another move won).
        ``announce``: the turn event reporting the move, stored with it (not when another won).
        """
        values = changes or {}
        async with self._sessions.begin() as session:
            if prior is not None:
                session.add(prior.row())
            result = await session.execute(
                update(ToolCallRecord)
                .where(ToolCallRecord.id == record_id, ToolCallRecord.state == expected.value)
                .values(state=new.value, **values)
            )
            if not getattr(result, "rowcount", 0):
                return None
            row = await session.get(ToolCallRecord, record_id, populate_existing=True)
            assert row is not None
            if result_message is not None:
                session.add(message_row(row.conversation_id, result_message))
            detail = {k: _jsonable(v) for k, v in values.items()}
            session.add(_audit(row, new.value, actor_key_id, detail))
            view = call_view(row)
            if announce is not None:
                session.add(_event_row(view, announce))
        return self._moved(view)

    async def add_approval(
        self,
        call: ToolCallView,
        mark: ApprovalMark,
        changes: dict[str, Any] | None,
        required: int,
    ) -> ToolCallView | None:
        """Adds one approval to a call awaiting its approvals, if no other was added since
        ``call`` was read (compare-and-set on the count); ``changes`` (the decision's fields)
        given: the approval releases the call (``approved``), else it is a partial approval.
        ``required``: the approvals the call needs now (rules may have tightened since).
        None when another approval or decision came first."""
        marks = [*call.approvals, mark]
        values: dict[str, Any] = {
            "approvals": _MARKS.dump_python(tuple(marks), mode="json"),
            "approval_count": len(marks),
            "approvals_required": required,
        }
        if changes is not None:
            values = {**values, **changes, "state": CallState.APPROVED.value}
        async with self._sessions.begin() as session:
            result = await session.execute(
                update(ToolCallRecord)
                .where(
                    ToolCallRecord.id == call.record_id,
                    ToolCallRecord.state == CallState.AWAITING_APPROVAL.value,
                    ToolCallRecord.approval_count == len(call.approvals),
                )
                .values(**values)
            )
            if not getattr(result, "rowcount", 0):
                return None
            row = await session.get(ToolCallRecord, call.record_id, populate_existing=True)
            assert row is not None
            action = "partially_approved" if changes is None else CallState.APPROVED.value
            detail = {
                "approvals": len(marks),
                "approvals_required": row.approvals_required,
                "owner": mark.owner,
                **{k: _jsonable(v) for k, v in (changes or {}).items()},
            }
            session.add(_audit(row, action, mark.key_id, detail))
            view = call_view(row)
        # A partial approval moves nothing: no state to observe (no metric, no webhook).
        return view if changes is None else self._moved(view)

    async def audit(
        self, call: ToolCallView, action: str, actor_key_id: int | None, detail: dict[str, Any]
    ) -> None:
        """Audits something that happened to a call without moving it (e.g. a policy check)."""
        async with self._sessions.begin() as session:
            session.add(PendingAudit(call, action, actor_key_id, detail).row())

    async def get(self, record_id: str) -> ToolCallView | None:
        async with self._sessions() as session:
            row = await session.get(ToolCallRecord, record_id)
        return call_view(row) if row else None

    async def for_conversation(
        self, conversation_id: str, round_number: int | None = None
    ) -> list[ToolCallView]:
        query = select(ToolCallRecord).where(ToolCallRecord.conversation_id == conversation_id)
        if round_number is not None:
            query = query.where(ToolCallRecord.round == round_number)
        async with self._sessions() as session:
            rows = await session.scalars(query.order_by(ToolCallRecord.created_at))
            return [call_view(r) for r in rows]

    async def count(self, state: CallState) -> int:
        async with self._sessions() as session:
            total = await session.scalar(
                select(func.count())
                .select_from(ToolCallRecord)
                .where(ToolCallRecord.state == state.value)
            )
        return int(total or 0)

    async def in_states(self, states: Iterable[CallState], limit: int = 500) -> list[ToolCallView]:
        async with self._sessions() as session:
            rows = await session.scalars(
                select(ToolCallRecord)
                .where(ToolCallRecord.state.in_([s.value for s in states]))
                .order_by(ToolCallRecord.created_at)
                .limit(limit)
            )
            return [call_view(r) for r in rows]


def _jsonable(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def _audit(
    row: ToolCallRecord, action: str, actor_key_id: int | None, detail: dict[str, Any]
) -> AuditEvent:
    return AuditEvent(
        created_at=utcnow(),
        actor_key_id=actor_key_id,
        action=f"tool_call.{action}",
        conversation_id=row.conversation_id,
        tool_call_id=row.id,
        tool_name=row.tool_name,
        detail=detail,
    )
