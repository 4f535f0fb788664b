"""The moves of a tool call: one typed transition per edge of the state machine
(``tool_call_view.EDGES``).

A transition knows, in one place, everything its move writes: the columns it sets, the call as it
leaves it (``applied``), the result message the model reads when it ends the call, and the turn
event that reports it. ``ToolCallStore`` writes a transition as a compare-and-set on the call's
state with its audit row, its result message and its event, in one transaction. That is the one
rule for a transition's event: it is stored with the move, never before or after it, so a
follower never sees a state without its event (and a move that lost writes neither).

A transition built for a move the table does not have raises ``IllegalMove``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, ClassVar

from chat_service import tool_call_sql as sql
from chat_service.events import (
    ToolCallAwaitingApproval,
    ToolCallCompleted,
    ToolCallStarted,
    TurnEvent,
)
from chat_service.tool_call_view import EDGES, CallState, Edge, ToolCallView
from db.base import utcnow
from db.transactions import Insert
from llm_service.types import JSON, ContentPart, ImagePart, TextPart, ToolResultMessage


class IllegalMove(ValueError):
    """A transition from a state its edge does not leave, or to one it does not enter."""


@dataclass(frozen=True, slots=True)
class PendingAudit:
    """An audit row of something that happened to a call (e.g. a policy check), written in the
    transaction of the move it led to: one commit instead of two."""

    call: ToolCallView
    action: str
    actor_key_id: int | None
    detail: JSON
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
class Decision:
    """A person's decision on a held call: who, when, and the reason they gave."""

    key_id: int
    at: datetime
    reason: str | None = None

    def columns(self) -> dict[str, object]:
        return {
            "decided_by_key_id": self.key_id,
            "decided_at": self.at,
            "decision_reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a call ended, as stored (``result``) and as the model is told (``told``: the result
    message's text, when it differs from what is stored)."""

    result: str
    is_error: bool
    at: datetime
    told: str | None = None
    images: tuple[ImagePart, ...] = ()  # what the tool returned besides text, told whole

    def columns(self) -> dict[str, object]:
        return {"result": self.result, "result_is_error": self.is_error, "finished_at": self.at}


@dataclass(frozen=True, slots=True)
class Identity:
    """The definition a call is decided on: its server and definition hash."""

    server: str
    definition_hash: str

    def columns(self) -> dict[str, object]:
        return {"server": self.server, "definition_hash": self.definition_hash}


@dataclass(frozen=True, kw_only=True)
class Transition:
    """One move along ``edge``. ``prior``: what led to it (a policy check), audited first, even
    when another move won; ``actor_key_id``: who made the move, for its audit row."""

    edge: ClassVar[Edge]
    # The event reporting the call's new state (None: the edge has none of its own).
    event: ClassVar[type[ToolCallAwaitingApproval | ToolCallStarted | ToolCallCompleted] | None]
    prior: PendingAudit | None = None
    actor_key_id: int | None = None

    def __post_init__(self) -> None:
        spec = EDGES[self.edge]
        if self.source not in spec.sources or self.target not in spec.targets:
            raise IllegalMove(f"no {self.edge} from {self.source} to {self.target}")

    @property
    def source(self) -> CallState:
        """The state the call must be in (the compare of the compare-and-set)."""
        raise NotImplementedError

    @property
    def target(self) -> CallState:
        raise NotImplementedError

    def columns(self) -> dict[str, object]:
        """What the move sets besides the state (names checked by ``tool_call_sql.SETTABLE``)."""
        return {}

    @property
    def outcome(self) -> Outcome | None:
        """How the call ended, for a move that ends it."""
        return None

    def applied(self, call: ToolCallView) -> ToolCallView:
        """The call as this move leaves it."""
        return replace(call, state=self.target, **self.columns())  # type: ignore[arg-type]

    def result_message(self, call: ToolCallView) -> ToolResultMessage | None:
        """The message the model reads as the call's result, for a move that ends it: a settled
        call has exactly one result in the history."""
        outcome = self.outcome
        if outcome is None:
            return None
        text = outcome.result if outcome.told is None else outcome.told
        content: str | tuple[ContentPart, ...] = text
        if outcome.images:
            content = (TextPart(text), *outcome.images)
        return ToolResultMessage(
            call.call_id, content, name=call.tool_name, is_error=outcome.is_error
        )

    def reported(self, call: ToolCallView) -> TurnEvent | None:
        """The event reporting ``call`` as this move left it."""
        return None if self.event is None else self.event(call)

    def audit_detail(self) -> JSON:
        return {key: _jsonable(value) for key, value in self.columns().items()}


@dataclass(frozen=True, kw_only=True)
class Deny(Transition):
    """Policy refused the call, at proposal, at an approval (``decision``: the approver's) or
    just before it runs; the model is told why."""

    edge = Edge.DENY
    event = ToolCallCompleted
    from_state: CallState
    reason: str
    at: datetime
    decision: Decision | None = None

    @property
    def source(self) -> CallState:
        return self.from_state

    @property
    def target(self) -> CallState:
        return CallState.DENIED_BY_POLICY

    @property
    def outcome(self) -> Outcome:
        return Outcome(self.reason, True, self.at, told=f"Denied by policy: {self.reason}")

    def columns(self) -> dict[str, object]:
        decided = {} if self.decision is None else self.decision.columns()
        return {"policy_reason": self.reason, **self.outcome.columns(), **decided}


@dataclass(frozen=True, kw_only=True)
class Hold(Transition):
    """The call waits for ``approvals_required`` approvals until ``expires_at``; ``reason``:
    why, when policy says more than that the tool needs approval (a guardrail's finding)."""

    edge = Edge.HOLD
    event = ToolCallAwaitingApproval
    identity: Identity
    expires_at: datetime
    approvals_required: int
    reason: str | None = None

    @property
    def source(self) -> CallState:
        return CallState.PROPOSED

    @property
    def target(self) -> CallState:
        return CallState.AWAITING_APPROVAL

    def columns(self) -> dict[str, object]:
        return {
            **self.identity.columns(),
            "expires_at": self.expires_at,
            "approvals_required": self.approvals_required,
            **({} if self.reason is None else {"policy_reason": self.reason}),
        }


@dataclass(frozen=True, kw_only=True)
class Approve(Transition):
    """By policy at proposal (``identity``: the definition decided on), or by a person's
    ``decision`` on a held call."""

    edge = Edge.APPROVE
    event = None  # the start that follows reports it
    identity: Identity | None = None
    decision: Decision | None = None

    @property
    def source(self) -> CallState:
        return CallState.PROPOSED if self.decision is None else CallState.AWAITING_APPROVAL

    @property
    def target(self) -> CallState:
        return CallState.APPROVED

    def columns(self) -> dict[str, object]:
        identity = {} if self.identity is None else self.identity.columns()
        decided = {} if self.decision is None else self.decision.columns()
        return {**identity, **decided}


@dataclass(frozen=True, kw_only=True)
class Reject(Transition):
    edge = Edge.REJECT
    event = ToolCallCompleted
    decision: Decision

    @property
    def source(self) -> CallState:
        return CallState.AWAITING_APPROVAL

    @property
    def target(self) -> CallState:
        return CallState.REJECTED

    @property
    def outcome(self) -> Outcome:
        text = f"Rejected by reviewer: {self.decision.reason or 'no reason given'}"
        return Outcome(text, True, self.decision.at)

    def columns(self) -> dict[str, object]:
        return {**self.decision.columns(), **self.outcome.columns()}


@dataclass(frozen=True, kw_only=True)
class Expire(Transition):
    """No decision in time: that is the decision (``decided_at``), with no one's name on it."""

    edge = Edge.EXPIRE
    event = ToolCallCompleted
    at: datetime

    @property
    def source(self) -> CallState:
        return CallState.AWAITING_APPROVAL

    @property
    def target(self) -> CallState:
        return CallState.EXPIRED

    @property
    def outcome(self) -> Outcome:
        return Outcome("The approval request expired; the call was not run.", True, self.at)

    def columns(self) -> dict[str, object]:
        return {"decided_at": self.at, **self.outcome.columns()}


@dataclass(frozen=True, kw_only=True)
class Cancel(Transition):
    """Its MCP client cancelled the task before the call ran (``tasks/cancel``, by
    ``actor_key_id``): it never runs, and leaves the approval queue."""

    edge = Edge.CANCEL
    event = ToolCallCompleted
    from_state: CallState
    at: datetime

    @property
    def source(self) -> CallState:
        return self.from_state

    @property
    def target(self) -> CallState:
        return CallState.CANCELLED

    @property
    def outcome(self) -> Outcome:
        return Outcome("The MCP client cancelled the task before the call ran.", True, self.at)

    def columns(self) -> dict[str, object]:
        return self.outcome.columns()


@dataclass(frozen=True, kw_only=True)
class Start(Transition):
    """The call runs: the commit of this move is what makes it run at most once."""

    edge = Edge.START
    event = ToolCallStarted
    at: datetime

    @property
    def source(self) -> CallState:
        return CallState.APPROVED

    @property
    def target(self) -> CallState:
        return CallState.EXECUTING

    def columns(self) -> dict[str, object]:
        return {"started_at": self.at}


@dataclass(frozen=True, kw_only=True)
class _Ending(Transition):
    """A move from `executing` that ends the call with its ``ended`` outcome."""

    ended: Outcome

    @property
    def source(self) -> CallState:
        return CallState.EXECUTING

    @property
    def outcome(self) -> Outcome:
        return self.ended

    def columns(self) -> dict[str, object]:
        return self.ended.columns()


@dataclass(frozen=True, kw_only=True)
class Settle(_Ending):
    """The call ran: succeeded, or failed when its result is an error."""

    edge = Edge.SETTLE
    event = ToolCallCompleted
    refused: str | None = None  # why the MCP client did not send it (``DEFINITION_CHANGED``)

    @property
    def target(self) -> CallState:
        return CallState.FAILED if self.ended.is_error else CallState.SUCCEEDED

    def audit_detail(self) -> JSON:
        detail = super().audit_detail()
        return detail if self.refused is None else {**detail, "refused": self.refused}


@dataclass(frozen=True, kw_only=True)
class TimeOut(_Ending):
    edge = Edge.TIME_OUT
    event = ToolCallCompleted

    @property
    def target(self) -> CallState:
        return CallState.TIMED_OUT


@dataclass(frozen=True, kw_only=True)
class Lose(_Ending):
    """The process running the call died, or the connection to its server died while the call
    was out: it is never run again, its outcome is unknown."""

    edge = Edge.LOSE
    event = ToolCallCompleted

    @property
    def target(self) -> CallState:
        return CallState.UNKNOWN_OUTCOME


def _jsonable(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value
