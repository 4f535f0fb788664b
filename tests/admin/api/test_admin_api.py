"""The admin JSON API: keys, audit log, usage, servers and tools; admins only."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.support.tool_loop import LoopStack

ADMIN_READS = [
    "/v1/admin/keys",
    "/v1/admin/audit",
    "/v1/admin/usage",
    "/v1/admin/servers",
    "/v1/admin/tools",
    "/v1/admin/approvals",
    "/v1/admin/tool-reviews",
]
ADMIN_WRITES = [
    ("/v1/admin/keys", {"name": "sneaky", "roles": ["admin"]}),
    ("/v1/admin/keys/1/revoke", None),
    ("/v1/admin/approvals/x/approve", None),
    ("/v1/admin/approvals/x/reject", None),
    ("/v1/admin/tool-reviews/1/approve", None),
    ("/v1/admin/tool-reviews/1/reject", None),
]


def run_turn(stack: LoopStack, model: str) -> tuple[str, dict[str, Any]]:
    with stack.client(stack.user_key) as client:
        conversation_id = client.post("/v1/conversations", json={"model": model}).json()["id"]
        turn = client.post(f"/v1/conversations/{conversation_id}/messages", json={"content": "go"})
        assert turn.status_code == 200, turn.text
        return conversation_id, turn.json()


@pytest.mark.parametrize("path", ADMIN_READS)
def test_every_admin_read_refuses_non_admin_keys(admin_stack: LoopStack, path: str) -> None:
    with admin_stack.client(admin_stack.user_key) as client:
        refused = client.get(path)
    assert refused.status_code == 403
    assert refused.json()["error"]["type"] == "permission_error"
    with admin_stack.client("gw-not-a-key") as client:
        assert client.get(path).status_code == 401


@pytest.mark.parametrize(("path", "body"), ADMIN_WRITES)
def test_every_admin_write_refuses_non_admin_keys(
    admin_stack: LoopStack, path: str, body: dict[str, Any] | None
) -> None:
    with admin_stack.client(admin_stack.user_key) as client:
        assert client.post(path, json=body).status_code == 403


def test_a_created_key_is_shown_once_works_and_can_be_revoked(admin_stack: LoopStack) -> None:
    with admin_stack.client(admin_stack.admin_key) as admin:
        created = admin.post("/v1/admin/keys", json={"name": "batch-jobs", "roles": ["user"]})
        assert created.status_code == 201, created.text
        new = created.json()
        listed = admin.get("/v1/admin/keys").json()["data"]
        assert [k for k in listed if k["id"] == new["id"]] == [
            {k: v for k, v in new.items() if k != "key"}
        ]
        assert all("key" not in k for k in listed)
        with admin_stack.client(new["key"]) as user:
            assert user.get("/v1/tools").status_code == 200
            assert admin.post(f"/v1/admin/keys/{new['id']}/revoke").status_code == 200
            assert user.get("/v1/tools").status_code == 401
        assert admin.post(f"/v1/admin/keys/{new['id']}/revoke").status_code == 404


def test_an_admin_cannot_revoke_the_key_it_is_using(admin_stack: LoopStack) -> None:
    # As on the admin UI: revoking the key in use would lock the admin out mid-request.
    with admin_stack.client(admin_stack.admin_key) as admin:
        own = next(
            k["id"]
            for k in admin.get("/v1/admin/keys").json()["data"]
            if k["prefix"] and admin_stack.admin_key.startswith(k["prefix"])
        )
        refused = admin.post(f"/v1/admin/keys/{own}/revoke")
        assert (refused.status_code, refused.json()["error"]["code"]) == (409, "own_key")
        assert admin.get("/v1/admin/keys").status_code == 200  # still signed in


def test_key_creation_refuses_bad_roles(admin_stack: LoopStack) -> None:
    with admin_stack.client(admin_stack.admin_key) as admin:
        bad = admin.post("/v1/admin/keys", json={"name": "x", "roles": ["Root Access!"]})
        empty = admin.post("/v1/admin/keys", json={"name": "x", "roles": []})
    assert bad.status_code == 400
    assert bad.json()["error"]["param"] == "roles"
    assert empty.status_code == 400


def test_audit_log_filters_and_pages(admin_stack: LoopStack) -> None:
    conversation_id, _ = run_turn(admin_stack, "time-server")
    with admin_stack.client(admin_stack.admin_key) as admin:
        mine = admin.get("/v1/admin/audit", params={"conversation": conversation_id}).json()
        actions = [e["action"] for e in mine["data"]]
        assert set(actions) >= {"tool_call.proposed", "tool_call.succeeded"}
        assert {e["tool"] for e in mine["data"]} == {"get_time"}
        ids = [e["id"] for e in mine["data"]]
        assert ids == sorted(ids, reverse=True)

        first = admin.get(
            "/v1/admin/audit", params={"conversation": conversation_id, "limit": 1}
        ).json()
        assert [e["id"] for e in first["data"]] == ids[:1]
        second = admin.get(
            "/v1/admin/audit",
            params={"conversation": conversation_id, "limit": 1, "before": first["next_before"]},
        ).json()
        assert [e["id"] for e in second["data"]] == ids[1:2]

        only = admin.get(
            "/v1/admin/audit", params={"action": "tool_call.proposed", "tool": "get_time"}
        )
        assert {(e["action"], e["tool"]) for e in only.json()["data"]} == {
            ("tool_call.proposed", "get_time")
        }
        nobody = admin.get("/v1/admin/audit", params={"actor": 999_999}).json()
        assert nobody == {"object": "list", "data": [], "next_before": None}


def test_usage_is_aggregated_per_key_and_model(admin_stack: LoopStack) -> None:
    with admin_stack.client(admin_stack.user_key) as user:
        for _ in range(2):
            reply = user.post(
                "/v1/chat/completions",
                json={"model": "looper", "messages": [{"role": "user", "content": "hi"}]},
            )
            assert reply.status_code == 200, reply.text
    deadline = time.monotonic() + 10
    mine: list[dict[str, Any]] = []
    # Usage is written in batches off the request path (about once a second).
    with admin_stack.client(admin_stack.admin_key) as admin:
        while not (mine and mine[0]["requests"] >= 2) and time.monotonic() < deadline:
            rows = admin.get("/v1/admin/usage").json()["data"]
            mine = [r for r in rows if r["key_name"] == "product-team" and r["model"] == "looper"]
    assert len(mine) == 1
    assert mine[0]["requests"] == 2
    assert mine[0]["errors"] == 0


def test_tools_show_their_effective_policy_and_servers_their_status(
    admin_stack: LoopStack,
) -> None:
    with admin_stack.client(admin_stack.admin_key) as admin:
        tools = {t["name"]: t for t in admin.get("/v1/admin/tools").json()["data"]}
        servers = admin.get("/v1/admin/servers").json()
    assert set(tools) == {"get_time", "transfer_money", "admin_only", "read_email"}
    assert tools["transfer_money"]["policy"] == {
        "enabled": True,
        "roles": ["user"],
        "requires_approval": True,
        "auto_approved": False,
        "approval_rules": None,
        "held_for_review": False,
        "guardrails": tools["transfer_money"]["policy"]["guardrails"],
        "admin_override": None,
    }
    assert tools["transfer_money"]["policy"]["guardrails"]["arguments"]["secrets"] == {
        "action": "hold",
        "rule": "default",
    }
    assert tools["admin_only"]["policy"]["roles"] == ["admin"]
    assert servers == {"object": "list", "data": []}
