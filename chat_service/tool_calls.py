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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Protocol, cast

from pydantic import Field, TypeAdapter
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from chat_service import tool_call_sql as sql
from chat_service.messages import Timestamp, message_json
from chat_service.store_sql import ADD_EVENT, ADD_MESSAGE
from db.base import utcnow
from db.models import ToolCallRecord
from db.transactions import Operation, Statement, Transactions, json_of, utc
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
        approvals=_MARKS.validate_python(json_of(row[21]) or []),
    )


def _time(value: Any) -> datetime | None:
    return None if value is None else utc(value)


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


@dataclass(frozen=True, slots=True)
class PendingAudit:
    """An audit row of something that happened to a call (e.g. a policy check), written in the
    transaction of the move it led to: one commit instead of two."""

    call: ToolCallView
    action: str
    actor_key_id: int | None
    detail: dict[str, Any]
    at: datetime = field(default_factory=utcnow)

    def statement(self) -> Statement:
        call = self.call
        return sql.AUDIT, (
            self.at,
            self.actor_key_id,
            f"tool_call.{self.action}",
            call.conversation_id,
            call.record_id,
            call.tool_name,
            self.detail,
        )


class ToolCallStore:
    """Tool-call rows, read and moved as plain SQL on the pool's driver connection
    (``db.transactions``): a move, its audit, its result message and its event are
    one transaction and, on SQLite, one hand-off to the driver's thread."""

    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], on_move: MoveObserver | None = None
    ) -> None:
        self._transactions = Transactions(cast(AsyncEngine, sessions.kw["bind"]))
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
        def propose() -> Operation[ToolCallView]:
            row = (
                str(uuid.uuid4()),
                conversation_id,
                call_id,
                round_number,
                tool_name,
                arguments,
                arguments_hash(arguments),
                CallState.PROPOSED.value,
                requested_by_key_id,
                False,
                utcnow(),
            )
            view = view_of((yield (sql.PROPOSE, row))[0])
            detail = {"arguments": arguments}
            yield PendingAudit(view, "proposed", requested_by_key_id, detail).statement()
            if announce is not None:
                yield _event(view, announce)
            return view

        return self._moved(await self._transactions.run(propose()))

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

        def move() -> Operation[ToolCallView | None]:
            if prior is not None:
                yield prior.statement()
            parameters = (new.value, *values.values(), record_id, expected.value)
            rows = yield (sql.move(tuple(values)), parameters)
            if not rows:
                return None
            view = view_of(rows[0])
            if result_message is not None:
                yield _message(view.conversation_id, result_message)
            detail = {k: _jsonable(v) for k, v in values.items()}
            yield PendingAudit(view, new.value, actor_key_id, detail).statement()
            if announce is not None:
                yield _event(view, announce)
            return view

        moved = await self._transactions.run(move())
        return None if moved is None else self._moved(moved)

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
            **(changes or {}),
        }
        waiting = CallState.AWAITING_APPROVAL
        new = waiting if changes is None else CallState.APPROVED

        def approve() -> Operation[ToolCallView | None]:
            parameters = (new.value, *values.values(), call.record_id, waiting.value)
            rows = yield (sql.add_approval(tuple(values)), (*parameters, len(call.approvals)))
            if not rows:
                return None
            view = view_of(rows[0])
            action = "partially_approved" if changes is None else CallState.APPROVED.value
            detail = {
                "approvals": len(marks),
                "approvals_required": view.approvals_required,
                "owner": mark.owner,
                **{k: _jsonable(v) for k, v in (changes or {}).items()},
            }
            yield PendingAudit(view, action, mark.key_id, detail).statement()
            return view

        view = await self._transactions.run(approve())
        # A partial approval moves nothing: no state to observe (no metric, no webhook).
        return view if view is None or changes is None else self._moved(view)

    async def audit(
        self, call: ToolCallView, action: str, actor_key_id: int | None, detail: dict[str, Any]
    ) -> None:
        """Audits something that happened to a call without moving it (e.g. a policy check)."""

        def audit() -> Operation[None]:
            yield PendingAudit(call, action, actor_key_id, detail).statement()

        await self._transactions.run(audit())

    async def get(self, record_id: str) -> ToolCallView | None:
        rows = await self._transactions.read(sql.GET, record_id)
        return view_of(rows[0]) if rows else None

    async def for_conversation(
        self, conversation_id: str, round_number: int | None = None
    ) -> list[ToolCallView]:
        if round_number is None:
            rows = await self._transactions.read(sql.FOR_CONVERSATION, conversation_id)
        else:
            rows = await self._transactions.read(sql.FOR_ROUND, conversation_id, round_number)
        return [view_of(row) for row in rows]

    async def count(self, state: CallState) -> int:
        rows = await self._transactions.read(sql.COUNT, state.value)
        return int(rows[0][0])

    async def in_states(self, states: Iterable[CallState], limit: int = 500) -> list[ToolCallView]:
        values = [state.value for state in states]
        rows = await self._transactions.read(sql.in_states(len(values)), *values, limit)
        return [view_of(row) for row in rows]


def _event(view: ToolCallView, announce: Announce) -> Statement:
    event = announce(view)
    return ADD_EVENT, (view.conversation_id, event.type, event.data, utcnow())


def _message(conversation_id: str, message: ToolResultMessage) -> Statement:
    return ADD_MESSAGE, (conversation_id, message.role, message_json(message), False, utcnow())


def _jsonable(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value
