"""Approval rules through a running gateway: set by an admin (API) or the config file, decided
by the one policy decision, audited with the rule, and two approvers across replicas."""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

import httpx

from tests.chat_service.test_tool_loop import conversation, decide, follow, pending_call, start
from tests.support.admin_ui import signed_in_client
from tests.support.databases import postgres_database
from tests.support.tool_loop import LoopStack, loop_stack_on


def set_rules(stack: LoopStack, rules: dict[str, Any] | None, **policy: Any) -> httpx.Response:
    with stack.client(stack.admin_key) as admin:
        return admin.put(
            "/v1/admin/tools/transfer_money/policy", json={"approval_rules": rules, **policy}
        )


def policy_checks(stack: LoopStack, conversation_id: str) -> list[dict[str, Any]]:
    with stack.client(stack.admin_key) as admin:
        events = admin.get(
            "/v1/admin/audit",
            params={"conversation": conversation_id, "action": "tool_call.policy_checked"},
        ).json()["data"]
    return [e["detail"] for e in events if e["tool"] == "transfer_money"]


def test_an_auto_approve_rule_lets_the_matching_call_run_and_is_audited(
    loop_stack: LoopStack,
) -> None:
    rules = {"auto_approve": [{"argument": "amount", "one_of": [5]}]}
    saved = set_rules(loop_stack, rules)
    assert saved.status_code == 200, saved.text
    assert saved.json()["policy"]["approval_rules"]["auto_approve"] == [
        {"argument": "amount", "one_of": [5], "prefix": None}
    ]

    conversation_id, turn = start(loop_stack, "loop")

    assert turn["status"] == "completed"
    assert ("transfer_money", {"amount": 5}) in loop_stack.catalog.calls
    proposed = [c for c in policy_checks(loop_stack, conversation_id) if c["stage"] == "propose"]
    assert proposed[0]["rule"] == {"rule": "auto_approve", "argument": "amount", "one_of": [5]}
    assert proposed[0]["approvals_required"] == 0


def test_a_threshold_holds_a_large_call_of_a_tool_that_otherwise_runs_directly(
    loop_stack: LoopStack,
) -> None:
    rules = {"approval_above": [{"argument": "amount", "above": 100}]}
    assert set_rules(loop_stack, rules, requires_approval=False).status_code == 200

    _, small = start(loop_stack, "loop")  # 5: runs directly
    conversation_id, large = start(loop_stack, "injected")  # 999: held

    assert small["status"] == "completed"
    assert large["status"] == "awaiting_approval"
    assert pending_call(large)["arguments"] == {"amount": 999}
    [proposed] = [c for c in policy_checks(loop_stack, conversation_id) if c["stage"] == "propose"]
    assert proposed["rule"] == {"rule": "approval_above", "argument": "amount", "above": 100.0}


def test_a_rule_on_an_argument_the_tool_lacks_is_refused(loop_stack: LoopStack) -> None:
    response = set_rules(loop_stack, {"approval_above": [{"argument": "amout", "above": 1}]})

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["param"] == "approval_rules"
    assert "no argument `amout`" in error["message"]
    malformed = set_rules(loop_stack, {"auto_approve": [{"argument": "amount"}]})
    assert malformed.status_code == 400


def test_two_approvers_one_partial_then_released(loop_stack: LoopStack) -> None:
    assert set_rules(loop_stack, {"approvers": 2}).status_code == 200
    conversation_id, turn = start(loop_stack, "loop")
    call = pending_call(turn)
    assert call["approvals_required"] == 2

    first = decide(loop_stack, call["record_id"], "approve", "looks fine")
    assert first.status_code == 200, first.text
    assert first.json()["state"] == "awaiting_approval"
    assert [a["owner"] for a in first.json()["approvals"]] == ["reviewer"]
    again = decide(loop_stack, call["record_id"], "approve")
    assert again.status_code == 409
    assert "another admin" in again.json()["error"]["message"]
    assert ("transfer_money", {"amount": 5}) not in loop_stack.catalog.calls
    with signed_in_client(loop_stack.gateway.url, loop_stack.admin_key) as browser:
        page = browser.get("/admin").text
    assert "1 of 2 approvals (approved by reviewer)" in page
    assert "You approved: another admin must too" in page

    second = decide(loop_stack, call["record_id"], "approve", key=loop_stack.other_admin_key)
    assert second.status_code == 200, second.text
    assert second.json()["state"] == "approved"
    follow(loop_stack, conversation_id)

    assert conversation(loop_stack, conversation_id)["messages"][-1]["content"] == (
        "Done: transferred"
    )
    with loop_stack.client(loop_stack.admin_key) as admin:
        audit = admin.get(
            "/v1/admin/audit", params={"action": "tool_call.partially_approved"}
        ).json()["data"]
    assert [e["detail"]["approvals"] for e in audit] == [1]


def test_the_requester_never_counts_even_where_self_approval_is_allowed(
    database_url: str,
) -> None:
    rules = [{"server": "local", "tool": "transfer_money", "approvers": 2}]
    with loop_stack_on(
        database_url, {"tool_policies": {"approval_rules": rules}}, allow_self_approval=True
    ) as stack:
        # The config's rules show on the tool as the admin API lists it.
        with stack.client(stack.admin_key) as admin:
            tools = admin.get("/v1/admin/tools").json()["data"]
        [transfer] = [t for t in tools if t["name"] == "transfer_money"]
        assert transfer["policy"]["approval_rules"]["approvers"] == 2
        both = stack.gateway.create_key("lead", ["user", "admin"])
        requester = LoopStack(stack.gateway, stack.catalog, both, both, both)
        _, turn = start(requester, "loop")
        call = pending_call(turn)

        own = decide(stack, call["record_id"], "approve", key=both)
        assert own.status_code == 403
        assert "requester never counts" in own.json()["error"]["message"]
        other = decide(stack, call["record_id"], "approve", key=stack.other_admin_key)
        assert other.json()["state"] == "awaiting_approval"


def test_two_approvals_on_two_replicas_release_the_call_once() -> None:
    rules = [{"server": "local", "tool": "transfer_money", "approvers": 2}]
    settings = {"tool_policies": {"approval_rules": rules}}
    with postgres_database() as database_url, ExitStack() as stacks:
        one = stacks.enter_context(loop_stack_on(database_url, settings))
        two = stacks.enter_context(loop_stack_on(database_url, settings))
        conversation_id, turn = start(one, "loop")
        call = pending_call(turn)

        partial = decide(two, call["record_id"], "approve", key=two.admin_key)
        assert partial.json()["state"] == "awaiting_approval"
        # The first approval is in the database: the other replica counts on top of it.
        released = decide(one, call["record_id"], "approve", key=one.other_admin_key)
        assert released.json()["state"] == "approved"
        assert [a["key_id"] for a in released.json()["approvals"]] == [
            partial.json()["approvals"][0]["key_id"],
            released.json()["decided_by_key_id"],
        ]
        follow(one, conversation_id)
        ran = [c for c in one.catalog.calls + two.catalog.calls if c[0] == "transfer_money"]
        assert ran == [("transfer_money", {"amount": 5})]
