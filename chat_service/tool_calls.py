"""Tool-call rows and their state machine (``chat_service.tool_call_view``). Every move after a
call's proposal is a compare-and-set in the database; those decided at the proposal are stored
with it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from chat_service import tool_call_sql as sql
from chat_service.messages import message_json
from chat_service.store_sql import EVENT, MESSAGE
from chat_service.tool_call_view import (
    APPROVAL_MARKS,
    ApprovalMark,
    CallState,
    ToolCallView,
    arguments_hash,
    moved,
    view_of,
)
from db.base import utcnow
from db.transactions import Insert, Operation, Transactions
from llm_service.types import ToolResultMessage

T = TypeVar("T")
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

    def statement(self) -> Insert:
        call = self.call
        return Insert(
            sql.AUDIT,
            (
                self.at,
                self.actor_key_id,
                f"tool_call.{self.action}",
                call.conversation_id,
                call.record_id,
                call.tool_name,
                self.detail,
            ),
        )


@dataclass(frozen=True, slots=True)
class Move:
    """A compare-and-set of a call's state from ``expected`` to ``new``, setting ``changes``,
    and what is written with it: ``prior``, what led to the move, audited first (even when
    another move won); the result message, so a settled call has exactly one result in the
    history the model sees; the move's own audit (by ``actor_key_id``); and ``announce``, the
    turn event reporting it (not when another move won)."""

    expected: CallState
    new: CallState
    changes: dict[str, Any] = field(default_factory=dict)
    actor_key_id: int | None = None
    result_message: ToolResultMessage | None = None
    prior: PendingAudit | None = None
    announce: Announce | None = None


@dataclass(frozen=True, slots=True)
class Proposal:
    """A drafted call (``tool_call_view.draft``) to store, the event announcing it, and the
    moves to make on it at once (those policy decided)."""

    draft: ToolCallView
    announce: Announce | None = None
    then: Sequence[Move] = ()


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

    async def move(self, record_id: str, move: Move) -> ToolCallView | None:
        """The compare-and-set (``Move``) in one transaction with what it writes: the call as
        it left it, or None when another move won."""
        moved = await self._transactions.run(_moving(record_id, move), durable=_starts([move]))
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
            "approvals": APPROVAL_MARKS.dump_python(tuple(marks), mode="json"),
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

    async def for_conversation(self, conversation_id: str) -> list[ToolCallView]:
        rows = await self._transactions.read(sql.FOR_CONVERSATION, conversation_id)
        return [view_of(row) for row in rows]

    async def count(self, state: CallState) -> int:
        rows = await self._transactions.read(sql.COUNT, state.value)
        return int(rows[0][0])

    async def in_states(self, states: Iterable[CallState], limit: int = 500) -> list[ToolCallView]:
        values = [state.value for state in states]
        rows = await self._transactions.read(sql.in_states(len(values)), *values, limit)
        return [view_of(row) for row in rows]


def _proposing(proposal: Proposal) -> Operation[list[ToolCallView]]:
    """The call stored as its moves leave it, in one insert (their compare-and-sets cannot lose
    on a row no other transaction sees yet), with each step's audit, result message and event
    as the proposal and the moves one by one would write them. Nothing is read back: the call
    reads as drafted (``draft``), then as each move leaves it (``moved``)."""
    call = proposal.draft
    views = [call]
    changes: dict[str, Any] = {}
    for move in proposal.then:
        if move.expected is not views[-1].state:
            raise ValueError(f"a move from {move.expected} cannot follow {views[-1].state}")
        views.append(moved(views[-1], move.new, move.changes))
        changes.update(move.changes)
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
    if proposal.announce is not None:
        yield _event(views[0], proposal.announce)
    for move, view in zip(proposal.then, views[1:], strict=True):
        if move.prior is not None:
            yield move.prior.statement()
        yield from _written(view, move)
    return views


def _moving(record_id: str, move: Move) -> Operation[ToolCallView | None]:
    if move.prior is not None:
        yield move.prior.statement()
    values = move.changes
    parameters = (move.new.value, *values.values(), record_id, move.expected.value)
    rows = yield (sql.move(tuple(values)), parameters)
    if not rows:
        return None
    view = view_of(rows[0])
    yield from _written(view, move)
    return view


def _written(view: ToolCallView, move: Move) -> Operation[None]:
    """What a move writes besides the row, ``view`` being the call as it left it."""
    if move.result_message is not None:
        yield _message(view.conversation_id, move.result_message)
    detail = {k: _jsonable(v) for k, v in move.changes.items()}
    yield PendingAudit(view, move.new.value, move.actor_key_id, detail).statement()
    if move.announce is not None:
        yield _event(view, move.announce)


def _event(view: ToolCallView, announce: Announce) -> Insert:
    event = announce(view)
    return Insert(EVENT, (view.conversation_id, event.type, event.data, utcnow()))


def _message(conversation_id: str, message: ToolResultMessage) -> Insert:
    row = (conversation_id, message.role, message_json(message), False, utcnow())
    return Insert(MESSAGE, row)


def _jsonable(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def _starts(moves: Sequence[Move]) -> bool:
    """Whether the moves start the call: the tool runs after the commit, so the commit must
    survive a power loss (``Transactions.run(durable=True)``), or a recovered database could
    show the call as never started and run it twice."""
    return any(move.new is CallState.EXECUTING for move in moves)
