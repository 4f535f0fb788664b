"""Tool-call rows, and their transitions (``chat_service.transitions``) written. Every move after
a call's proposal is a compare-and-set in the database; those decided at the proposal are stored
with it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from chat_service import tool_call_sql as sql
from chat_service.events import ToolCallCreated, TurnEvent
from chat_service.messages import message_json
from chat_service.store_sql import EVENT, MESSAGE
from chat_service.tool_call_view import (
    APPROVAL_MARKS,
    ApprovalMark,
    CallState,
    ToolCallView,
    arguments_hash,
    named,
)
from chat_service.transitions import Approve, IllegalMove, PendingAudit, Start, Transition
from db.base import utcnow
from db.transactions import Insert, Operation, Transactions
from llm_service.types import ToolResultMessage

T = TypeVar("T")
# Told of every state a call enters (for metrics).
MoveObserver = Callable[[ToolCallView], None]


@dataclass(frozen=True, slots=True)
class Proposal:
    """A drafted call (``tool_call_view.draft``) to store, and the transitions to make on it at
    once (those policy decided)."""

    draft: ToolCallView
    then: Sequence[Transition] = ()


class ToolCallStore:
    """Tool-call rows, read and moved as plain SQL on the pool's driver connection
    (``db.transactions``): a move, its audit, its result message and its event are
    one transaction and, on SQLite, one hand-off to the driver's thread."""

    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], on_move: MoveObserver | None = None
    ) -> None:
        self._transactions = Transactions.of(sessions)
        self._on_move = on_move

    async def propose(
        self, proposals: Sequence[Proposal], *, opening: Operation[T] | None = None
    ) -> tuple[T | None, list[list[ToolCallView]]]:
        """Stores drafted calls (``tool_call_view.draft``), each with the moves policy decided
        on it at once, after ``opening`` (e.g. the model's message that asked for the calls,
        ``store.completing``), all in one transaction: a round's calls are proposed and decided,
        with the message, in one commit, and never a message without its calls. Returns what
        ``opening`` returned, and for each call the call as proposed, then as each move left it
        (the moves must follow one another: none can lose on a row no one else sees yet)."""

        def propose() -> Operation[tuple[T | None, list[list[ToolCallView]]]]:
            opened = None if opening is None else (yield from opening)
            views = []
            for proposal in proposals:
                views.append((yield from _proposing(proposal)))
            return opened, views

        starts = any(_starts(proposal.then) for proposal in proposals)
        opened, views = await self._transactions.run(propose(), durable=starts)
        for call in views:
            for view in call:
                self._moved(view)
        return opened, views

    def _moved(self, view: ToolCallView) -> ToolCallView:
        if self._on_move is not None:
            self._on_move(view)
        return view

    async def move(self, record_id: str, move: Transition) -> ToolCallView | None:
        """The transition as a compare-and-set, in one transaction with what it writes: the
        call as it left it, or None when another move won."""
        moved = await self._transactions.run(_moving(record_id, move), durable=_starts([move]))
        return None if moved is None else self._moved(moved)

    async def add_approval(
        self,
        call: ToolCallView,
        mark: ApprovalMark,
        release: Approve | None,
        required: int,
    ) -> ToolCallView | None:
        """Adds one approval to a call awaiting its approvals, if no other was added since
        ``call`` was read (compare-and-set on the count); ``release`` given: the approval
        releases the call (that transition), else it is a partial approval.
        ``required``: the approvals the call needs now (rules may have tightened since).
        None when another approval or decision came first."""
        marks = [*call.approvals, mark]
        changes = None if release is None else release.columns()
        values: dict[str, Any] = {
            "approvals": APPROVAL_MARKS.dump_python(tuple(marks), mode="json"),
            "approval_count": len(marks),
            "approvals_required": required,
            **(changes or {}),
        }
        waiting = CallState.AWAITING_APPROVAL
        new = waiting if release is None else release.target

        def approve() -> Operation[ToolCallView | None]:
            parameters = (new.value, *values.values(), call.record_id, waiting.value)
            rows = yield (sql.add_approval(tuple(values)), (*parameters, len(call.approvals)))
            if not rows:
                return None
            view = named(rows[0])
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
        return named(rows[0]) if rows else None

    async def for_conversation(self, conversation_id: str) -> list[ToolCallView]:
        rows = await self._transactions.read(sql.FOR_CONVERSATION, conversation_id)
        return [named(row) for row in rows]

    async def count(self, state: CallState) -> int:
        rows = await self._transactions.read(sql.COUNT, state.value)
        return int(rows[0][0])

    async def decided(self, limit: int = 50) -> list[ToolCallView]:
        """The calls a person's decision was asked for and that have one (approved, rejected,
        expired, or denied when approved), whatever state they moved on to, newest first: an
        approved call that ran is listed with its outcome."""
        rows = await self._transactions.read(sql.DECIDED, limit)
        return [named(row) for row in rows]

    async def in_states(self, states: Iterable[CallState], limit: int = 500) -> list[ToolCallView]:
        values = [state.value for state in states]
        rows = await self._transactions.read(sql.in_states(len(values)), *values, limit)
        return [named(row) for row in rows]


def _proposing(proposal: Proposal) -> Operation[list[ToolCallView]]:
    """The call stored as its transitions leave it, in one insert (their compare-and-sets cannot
    lose on a row no other transaction sees yet), with each step's audit, result message and
    event as the proposal and the moves one by one would write them. Nothing is read back: the
    call reads as drafted (``draft``), then as each transition leaves it (``applied``)."""
    call = proposal.draft
    views = [call]
    changes: dict[str, object] = {}
    for move in proposal.then:
        if move.source is not views[-1].state:
            raise IllegalMove(f"a move from {move.source} cannot follow {views[-1].state}")
        views.append(move.applied(views[-1]))
        changes.update(move.columns())
    arguments = call.arguments
    row = {
        "id": call.record_id,
        "conversation_id": call.conversation_id,
        "call_id": call.call_id,
        "round": call.round,
        "tool_name": call.tool_name,
        "arguments": arguments,
        "arguments_hash": arguments_hash(arguments),
        "state": views[-1].state.value,
        "requested_by_key_id": call.requested_by_key_id,
        "approvals_required": call.approvals_required,
        "approval_count": 0,
        "result_is_error": call.result_is_error,
        "created_at": call.created_at,
        **changes,
    }
    yield Insert(sql.propose(tuple(row)), tuple(row.values()))
    detail = {"arguments": arguments}
    yield PendingAudit(views[0], "proposed", call.requested_by_key_id, detail).statement()
    yield _event(views[0], ToolCallCreated(views[0]))
    for move, view in zip(proposal.then, views[1:], strict=True):
        if move.prior is not None:
            yield move.prior.statement()
        yield from _written(view, move)
    return views


def _moving(record_id: str, move: Transition) -> Operation[ToolCallView | None]:
    if move.prior is not None:
        yield move.prior.statement()
    values = move.columns()
    parameters = (move.target.value, *values.values(), record_id, move.source.value)
    rows = yield (sql.move(tuple(values)), parameters)
    if not rows:
        return None
    view = named(rows[0])
    yield from _written(view, move)
    return view


def _written(view: ToolCallView, move: Transition) -> Operation[None]:
    """What a transition writes besides the row, ``view`` being the call as it left it."""
    message = move.result_message(view)
    if message is not None:
        yield _message(view.conversation_id, message)
    yield PendingAudit(view, move.target.value, move.actor_key_id, move.audit_detail()).statement()
    event = move.reported(view)
    if event is not None:
        yield _event(view, event)


def _event(view: ToolCallView, event: TurnEvent) -> Insert:
    return Insert(EVENT, (view.conversation_id, event.type, event.data, utcnow()))


def _message(conversation_id: str, message: ToolResultMessage) -> Insert:
    row = (conversation_id, message.role, message_json(message), False, utcnow())
    return Insert(MESSAGE, row)


def _jsonable(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def _starts(moves: Sequence[Transition]) -> bool:
    """Whether the moves start the call: the tool runs after the commit, so the commit must
    survive a power loss (``Transactions.run(durable=True)``), or a recovered database could
    show the call as never started and run it twice."""
    return any(isinstance(move, Start) for move in moves)
