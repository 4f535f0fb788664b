"""The state machine, walked: every edge of ``EDGES`` is reachable from a proposal and moves a
stored call as its transition says, and no other move is possible: each illegal one is tried,
on a call in each state, and refused (at construction, or by the store's compare-and-set)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from chat_service.store import ConversationStore
from chat_service.tool_call_view import EDGES, CallState, Edge, ToolCallView, draft
from chat_service.tool_calls import Proposal, ToolCallStore
from chat_service.transitions import (
    Approve,
    Cancel,
    Decision,
    Deny,
    Expire,
    Hold,
    Identity,
    IllegalMove,
    Lose,
    Outcome,
    Reject,
    Settle,
    Start,
    TimeOut,
    Transition,
)
from tests.support.store import with_store

AT = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
IDENTITY = Identity("desk", "definition")


def edge_between(source: CallState, target: CallState) -> Edge | None:
    """The edge of the table that moves a call from ``source`` to ``target``, if any."""
    for edge, spec in EDGES.items():
        if source in spec.sources and target in spec.targets:
            return edge
    return None


def _ended(target: CallState) -> Outcome:
    return Outcome("result", target is not CallState.SUCCEEDED, AT)


# Each edge's transition, made from the move's source and target.
MAKE: dict[Edge, Callable[[CallState, CallState], Transition]] = {
    Edge.DENY: lambda source, _: Deny(from_state=source, reason="no", at=AT),
    Edge.HOLD: lambda *_: Hold(identity=IDENTITY, expires_at=AT, approvals_required=1),
    Edge.APPROVE: lambda source, _: (
        Approve(identity=IDENTITY)
        if source is CallState.PROPOSED
        else Approve(decision=Decision(2, AT, "fine"))
    ),
    Edge.REJECT: lambda *_: Reject(decision=Decision(2, AT, "no")),
    Edge.EXPIRE: lambda *_: Expire(at=AT),
    Edge.START: lambda *_: Start(at=AT),
    Edge.SETTLE: lambda _, target: Settle(ended=_ended(target)),
    Edge.TIME_OUT: lambda _, target: TimeOut(ended=_ended(target)),
    Edge.LOSE: lambda _, target: Lose(ended=_ended(target)),
    Edge.CANCEL: lambda source, _: Cancel(from_state=source, at=AT, actor_key_id=1),
}


def transition(edge: Edge, source: CallState, target: CallState) -> Transition:
    return MAKE[edge](source, target)


def all_moves() -> list[tuple[Edge, CallState, CallState]]:
    return [
        (edge, source, target)
        for edge, spec in EDGES.items()
        for source in sorted(spec.sources)
        for target in sorted(spec.targets)
    ]


def paths() -> dict[CallState, list[Transition]]:
    """A shortest way to each state from a proposal, along the table's edges."""
    found: dict[CallState, list[Transition]] = {CallState.PROPOSED: []}
    frontier = [CallState.PROPOSED]
    while frontier:
        state = frontier.pop(0)
        for edge, source, target in all_moves():
            if source is state and target not in found:
                found[target] = [*found[state], transition(edge, source, target)]
                frontier.append(target)
    return found


def test_every_state_is_reachable_from_a_proposal() -> None:
    assert set(paths()) == set(CallState)


def test_a_transition_is_only_made_along_its_edge() -> None:
    for edge, source, target in all_moves():
        move = transition(edge, source, target)
        assert (move.edge, move.source, move.target) == (edge, source, target)
        assert edge_between(source, target) is edge
    for state in CallState:
        if state not in EDGES[Edge.DENY].sources:
            with pytest.raises(IllegalMove):
                Deny(from_state=state, reason="no", at=AT)


def test_no_move_leaves_a_settled_state_or_skips_an_edge() -> None:
    legal = {(source, target) for _, source, target in all_moves()}
    for source in CallState:
        for target in CallState:
            assert (edge_between(source, target) is not None) == ((source, target) in legal)


async def _call_in(
    calls: ToolCallStore, store: ConversationStore, state: CallState
) -> ToolCallView:
    conversation = await store.create(1, "mock", ["user"])
    proposal = draft(
        conversation_id=conversation.id,
        call_id="call_1",
        round_number=0,
        tool_name="get_time",
        arguments={},
        requested_by_key_id=1,
    )
    _, [views] = await calls.propose([Proposal(proposal, paths()[state])])
    assert views[-1].state is state
    return views[-1]


def test_every_edge_moves_a_stored_call_and_every_other_move_is_refused(migrated: str) -> None:
    async def use(
        store: ConversationStore, sessions: async_sessionmaker[AsyncSession]
    ) -> tuple[list[tuple[Edge, CallState, CallState | None]], list[str]]:
        calls = ToolCallStore(sessions)
        made: list[tuple[Edge, CallState, CallState | None]] = []
        for edge, source, target in all_moves():
            call = await _call_in(calls, store, source)
            moved = await calls.move(call.record_id, transition(edge, source, target))
            made.append((edge, source, None if moved is None else moved.state))
        refused: list[str] = []
        for state in CallState:
            for edge, source, target in all_moves():
                if source is state:
                    continue
                call = await _call_in(calls, store, state)
                moved = await calls.move(call.record_id, transition(edge, source, target))
                after = await calls.get(call.record_id)
                assert after is not None
                if moved is not None or after.state is not state:
                    refused.append(f"{edge} moved a call in {state}")
        return made, refused

    made, wrongly_allowed = with_store(migrated, use)
    assert made == [(edge, source, target) for edge, source, target in all_moves()]
    assert wrongly_allowed == []
