"""A conversation turn reserves its key's budget before each model call, so a turn resumed after
an approval does not call the model once the budget is spent."""

from __future__ import annotations

from pathlib import Path

from tests.chat_service.test_tool_loop import conversation, decide, follow, pending_call, start
from tests.support.tool_loop import MODELS, loop_stack_on

# The tool loop's stand-in model, at $1 a model call.
PRICED = [{**model, "price": {"per_request": 1.0}} for model in MODELS if model["name"] == "loop"]


def test_a_turn_resumed_after_approval_stops_at_the_budget(tmp_path: Path) -> None:
    settings = {"models": PRICED, "key_limits": {"roles": {"user": {"budget_per_day": 2}}}}
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}"
    with loop_stack_on(database_url, settings) as stack:
        # Two model calls ($2): one asks for get_time, the next for transfer_money, held.
        conversation_id, turn = start(stack, "loop")
        assert turn["status"] == "awaiting_approval"

        assert decide(stack, pending_call(turn)["record_id"], "approve").status_code == 200
        events = follow(stack, conversation_id)
        final = conversation(stack, conversation_id)

    # The approved call ran; the model call after it was refused before reaching the model.
    assert stack.catalog.calls == [("get_time", {}), ("transfer_money", {"amount": 5})]
    assert events[-1] == ("turn.finished", {"status": "failed"})
    [error] = [data for kind, data in events if kind == "error"]
    assert error["code"] == "budget_exceeded", error
    assert all(m["content"] != "Done: transferred" for m in final["messages"])
