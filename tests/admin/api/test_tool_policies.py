"""Tool policies an admin edits at run time: stored, audited, applied on top of the config."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.gateway import running_gateway
from tests.support.tool_loop import (
    MODELS,
    TRUSTED_LOCAL_TOOLS,
    LoopStack,
    loop_stack_on,
    make_catalog,
)

# The replica that saves a policy applies it at once; the timer is only for the others.
SLOW_REFRESH = {"tool_policies": {"refresh_seconds": 3600}}


@pytest.fixture
def stack(database_url: str) -> Iterator[LoopStack]:
    with loop_stack_on(database_url, SLOW_REFRESH) as stack:
        yield stack


def offered(stack: LoopStack) -> list[str]:
    with stack.client(stack.user_key) as user:
        return sorted(t["name"] for t in user.get("/v1/tools").json()["data"])


def put_policy(stack: LoopStack, tool: str, body: dict[str, Any]) -> Any:
    with stack.client(stack.admin_key) as admin:
        return admin.put(f"/v1/admin/tools/{tool}/policy", json=body)


def admin_listing(stack: LoopStack) -> dict[str, dict[str, Any]]:
    with stack.client(stack.admin_key) as admin:
        listed = admin.get("/v1/admin/tools").json()["data"]
    return {tool["name"]: tool["policy"] for tool in listed}


def test_a_disabled_tool_is_offered_to_no_model_and_calls_to_it_are_denied(
    stack: LoopStack,
) -> None:
    assert "get_time" in offered(stack)
    changed = put_policy(stack, "get_time", {"enabled": False})
    assert changed.status_code == 200, changed.text
    assert changed.json()["policy"]["enabled"] is False
    assert offered(stack) == ["read_email", "transfer_money"]
    policy = admin_listing(stack)["get_time"]
    assert policy["enabled"] is False
    assert policy["admin_override"] == {
        "enabled": False,
        "roles": None,
        "requires_approval": None,
        "approval_rules": None,
        "guardrails": None,
    }

    with stack.client(stack.user_key) as user:
        conversation_id = user.post("/v1/conversations", json={"model": "time-server"}).json()["id"]
        turn = user.post(f"/v1/conversations/{conversation_id}/messages", json={"content": "go"})
    assert turn.status_code == 200, turn.text
    [call] = turn.json()["tool_calls"]
    assert call["state"] == "denied_by_policy"
    assert stack.catalog.calls == []

    # null hands the setting back to the config file
    assert put_policy(stack, "get_time", {"enabled": None}).status_code == 200
    assert "get_time" in offered(stack)


def test_roles_and_approval_override_the_config_and_every_change_is_audited(
    stack: LoopStack,
) -> None:
    assert "admin_only" not in offered(stack)
    assert put_policy(stack, "admin_only", {"roles": ["user", "admin"]}).status_code == 200
    assert "admin_only" in offered(stack)
    assert put_policy(stack, "get_time", {"requires_approval": True}).status_code == 200
    # fields left out are kept
    assert put_policy(stack, "get_time", {"enabled": True}).status_code == 200
    listing = admin_listing(stack)
    assert listing["admin_only"]["roles"] == ["admin", "user"]
    assert listing["get_time"]["requires_approval"] is True
    assert listing["transfer_money"]["admin_override"] is None

    with stack.client(stack.admin_key) as admin:
        audit = admin.get(
            "/v1/admin/audit", params={"action": "tool.policy_changed", "tool": "get_time"}
        ).json()["data"]
    unset = {"approval_rules": None, "guardrails": None}
    assert [event["detail"]["after"] for event in audit] == [
        {"enabled": True, "roles": None, "requires_approval": True, **unset},
        {"enabled": None, "roles": None, "requires_approval": True, **unset},
    ]
    assert audit[1]["detail"]["before"] == {
        "enabled": None,
        "roles": None,
        "requires_approval": None,
        **unset,
    }


def test_bad_policy_changes_get_clear_errors(stack: LoopStack) -> None:
    unknown = put_policy(stack, "no_such_tool", {"enabled": False})
    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "tool_not_found"
    assert put_policy(stack, "get_time", {"enabled": "sometimes"}).status_code == 400
    assert put_policy(stack, "get_time", {"colour": "red"}).status_code == 400
    assert put_policy(stack, "get_time", {"roles": ["Not A Role"]}).status_code == 400


def test_only_admins_may_change_a_tool_policy(stack: LoopStack) -> None:
    with stack.client(stack.user_key) as user:
        refused = user.put("/v1/admin/tools/get_time/policy", json={"enabled": False})
    assert refused.status_code == 403
    assert "get_time" in offered(stack)


def test_another_replica_applies_the_change_within_its_refresh(database_url: str) -> None:
    with (
        loop_stack_on(database_url, SLOW_REFRESH) as first,
        running_gateway(
            database_url,
            tools=make_catalog(),
            models=MODELS,
            tool_pinning=TRUSTED_LOCAL_TOOLS,
            tool_policies={"refresh_seconds": 0.05},
        ) as second,
    ):
        replica = LoopStack(second, first.catalog, first.user_key, first.admin_key, "")
        assert "get_time" in offered(replica)
        assert put_policy(first, "get_time", {"enabled": False}).status_code == 200
        deadline = time.monotonic() + 10
        while "get_time" in offered(replica):
            assert time.monotonic() < deadline, "the other replica never applied the policy"
