"""Approval expiry: an undecided call is never run, and the turn completes without it."""

from __future__ import annotations

from tests.chat_service.test_tool_loop import conversation, decide, follow, pending_call, start
from tests.support.tool_loop import loop_stack_on


def test_an_expired_approval_is_rejected_and_the_turn_completes(database_url: str) -> None:
    with loop_stack_on(database_url, approval_expiry_seconds=0.3) as stack:
        conversation_id, turn = start(stack, "loop")
        record_id = pending_call(turn)["record_id"]

        events = follow(stack, conversation_id)  # the sweeper expires it and resumes the turn

        assert events[-1] == ("turn.finished", {"status": "completed"})
        final = conversation(stack, conversation_id)
        [call] = [c for c in final["tool_calls"] if c["record_id"] == record_id]
        assert call["state"] == "expired"
        assert "expired" in final["messages"][-1]["content"]
        assert ("transfer_money", {"amount": 5}) not in stack.catalog.calls
        late = decide(stack, record_id, "approve")
        assert late.status_code == 409


def test_an_approval_expires_and_its_turn_resumes_at_its_expiry_not_at_the_next_sweep(
    database_url: str,
) -> None:
    # The sweeper passes once at start and then not for an hour: only the expiry timer of the
    # replica that parked the turn can resume it.
    with loop_stack_on(
        database_url, approval_expiry_seconds=0.3, sweep_interval_seconds=3600
    ) as stack:
        conversation_id, turn = start(stack, "loop")
        record_id = pending_call(turn)["record_id"]

        events = follow(stack, conversation_id)

        assert events[-1] == ("turn.finished", {"status": "completed"})
        final = conversation(stack, conversation_id)
        [call] = [c for c in final["tool_calls"] if c["record_id"] == record_id]
        assert call["state"] == "expired"
        assert ("transfer_money", {"amount": 5}) not in stack.catalog.calls


def test_tool_calls_beyond_the_turn_budget_are_denied(database_url: str) -> None:
    with loop_stack_on(database_url, max_tool_calls_per_turn=1) as stack:
        _, turn = start(stack, "rogue")  # asks for two tools in one round

        states = [c["state"] for c in turn["tool_calls"]]
        assert states == ["denied_by_policy", "denied_by_policy"]
        assert "limit" in turn["tool_calls"][1]["policy_reason"]


def test_each_of_several_waiting_approvals_expires_at_its_own_expiry_from_one_schedule(
    database_url: str,
) -> None:
    # One schedule per process: after the first expiry it must sleep on until the next one.
    with loop_stack_on(
        database_url, approval_expiry_seconds=0.3, sweep_interval_seconds=3600
    ) as stack:
        first_id, first_turn = start(stack, "loop")
        first_record = pending_call(first_turn)["record_id"]
        second_id, second_turn = start(stack, "loop")
        second_record = pending_call(second_turn)["record_id"]

        for conversation_id, record_id in ((first_id, first_record), (second_id, second_record)):
            events = follow(stack, conversation_id)
            assert events[-1] == ("turn.finished", {"status": "completed"})
            calls = conversation(stack, conversation_id)["tool_calls"]
            [call] = [c for c in calls if c["record_id"] == record_id]
            assert call["state"] == "expired"
