"""The one policy decision at proposal, approval and execution, against a real MCP server whose
every execution is recorded in a file: each denied path leaves that file without the call."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.admin_ui import signed_in_client
from tests.support.gateway import RunningGateway, running_gateway
from tests.support.mcp_servers import crashy_stdio_command

RECORDER = Path(__file__).parents[1] / "support" / "recording_stdio_server.py"


def _script(*calls: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"tool_calls": list(calls)}, {"text": "After: {last_tool_result}"}]


MODELS = [
    {"name": name, "provider": "mock", "script": _script(*calls)}
    for name, calls in {
        "note": [{"name": "write_note", "arguments": {"text": "hello"}}],
        "undeclared": [{"name": "write_note", "arguments": {"text": "x", "cc": "boss"}}],
        "bad-date": [{"name": "schedule", "arguments": {"day": "tomorrow"}}],
        "slow": [{"name": "slow"}],
        "wipe": [{"name": "wipe"}],
        "ping": [{"name": "ping", "arguments": {"n": 7}}],
        "unknown": [{"name": "no_such_tool"}],
        "fresh": [{"name": "fresh_tool"}],
        "greedy": [{"name": "ping", "arguments": {"n": 100 + i}} for i in range(3)],
    }.items()
]


@dataclass
class Stack:
    gateway: RunningGateway
    record: Path
    user: str
    admin: str

    def call(
        self, key: str, method: str, path: str, body: dict[str, Any] | None = None
    ) -> httpx.Response:
        return httpx.request(
            method,
            f"{self.gateway.url}{path}",
            json=body,
            headers={"authorization": f"Bearer {key}"},
            timeout=30,
        )

    def turn(self, model: str, key: str | None = None) -> tuple[str, dict[str, Any]]:
        key = key or self.user
        conversation = self.call(key, "POST", "/v1/conversations", {"model": model}).json()
        path = f"/v1/conversations/{conversation['id']}/messages"
        turn = self.call(key, "POST", path, {"content": "go"})
        assert turn.status_code == 200, turn.text
        return conversation["id"], turn.json()

    def executions(self) -> list[dict[str, Any]]:
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines()]

    def policy(self, tool: str, change: dict[str, Any]) -> None:
        response = self.call(self.admin, "PUT", f"/v1/admin/tools/{tool}/policy", change)
        assert response.status_code == 200, response.text

    def settled(self, conversation_id: str) -> dict[str, Any]:
        """The conversation once its turn is over (a decision resumes it in the background)."""
        deadline = time.monotonic() + 20
        while True:
            state = self.call(self.user, "GET", f"/v1/conversations/{conversation_id}").json()
            if state["status"] == "idle" or time.monotonic() > deadline:
                return state
            time.sleep(0.02)  # polling the API the test exercises, not waiting for time


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    folder = tmp_path_factory.mktemp("decision")
    record = folder / "executions.jsonl"
    servers = [
        {
            "name": "rec",
            "transport": "stdio",
            "command": sys.executable,
            "args": [str(RECORDER), str(record)],
            "roles": ["user", "admin"],
            "trusted": True,
            "call_timeout": 1,
            "tools": {"write_note": {"requires_approval": True}},
        },
        {
            "name": "fresh",
            "transport": "stdio",
            "command": sys.executable,
            "args": [str(RECORDER), str(record), "fresh"],
            "roles": ["user", "admin"],
        },
    ]
    with running_gateway(
        f"sqlite+aiosqlite:///{folder / 'gateway.db'}",
        models=MODELS,
        mcp_servers=servers,
        tool_loop={"max_tool_calls_per_turn": 2, "follow_poll_seconds": 0.02},
    ) as gateway:
        yield Stack(
            gateway,
            record,
            user=gateway.create_key("product-team", ["user"]),
            admin=gateway.create_key("reviewer", ["admin"]),
        )


def _only_call(turn: dict[str, Any]) -> dict[str, Any]:
    [call] = turn["tool_calls"]
    return call


def _ran(stack: Stack, tool: str) -> list[dict[str, Any]]:
    return [e["arguments"] for e in stack.executions() if e["tool"] == tool]


def test_an_undeclared_argument_is_denied_before_any_human_sees_it(stack: Stack) -> None:
    _, turn = stack.turn("undeclared")

    call = _only_call(turn)
    assert (turn["status"], call["state"]) == ("completed", "denied_by_policy")
    assert "unknown argument `cc`" in call["policy_reason"]
    assert {"text": "x", "cc": "boss"} not in _ran(stack, "write_note")


def test_an_argument_of_the_wrong_format_is_denied(stack: Stack) -> None:
    _, turn = stack.turn("bad-date")

    call = _only_call(turn)
    assert call["state"] == "denied_by_policy"
    assert "is not a 'date'" in call["policy_reason"]
    assert _ran(stack, "schedule") == []


def test_narrowing_the_roles_before_approval_refuses_it(stack: Stack) -> None:
    conversation_id, turn = stack.turn("note")
    record_id = _only_call(turn)["record_id"]
    stack.policy("write_note", {"roles": ["admin"]})
    try:
        response = stack.call(stack.admin, "POST", f"/v1/admin/approvals/{record_id}/approve")
    finally:
        stack.policy("write_note", {"roles": None})

    assert response.status_code == 403, response.text
    assert response.json()["error"]["code"] == "approval_refused"
    final = stack.settled(conversation_id)
    [call] = final["tool_calls"]
    assert call["state"] == "denied_by_policy"
    assert "not allowed for this caller's roles" in final["messages"][-1]["content"]
    assert _ran(stack, "write_note") == []


def test_revoking_the_requesters_key_refuses_the_approval(stack: Stack) -> None:
    created = stack.call(
        stack.admin, "POST", "/v1/admin/keys", {"name": "temp", "roles": ["user"]}
    ).json()
    conversation_id, turn = stack.turn("note", key=created["key"])
    record_id = _only_call(turn)["record_id"]
    revoked = stack.call(stack.admin, "POST", f"/v1/admin/keys/{created['id']}/revoke")
    assert revoked.status_code == 200

    response = stack.call(stack.admin, "POST", f"/v1/admin/approvals/{record_id}/approve")

    assert response.status_code == 403, response.text
    assert "revoked" in response.json()["error"]["message"]
    state = stack.call(stack.admin, "GET", f"/v1/conversations/{conversation_id}").json()
    [call] = state["tool_calls"]
    assert call["state"] == "denied_by_policy"
    assert call["decided_by_key_id"] is not None
    assert _ran(stack, "write_note") == []


def test_self_approval_compares_owners_not_keys(stack: Stack) -> None:
    first = stack.call(
        stack.admin, "POST", "/v1/admin/keys", {"name": "ada", "roles": ["user", "admin"]}
    ).json()
    second = stack.call(
        first["key"],
        "POST",
        "/v1/admin/keys",
        {"name": "ada-2", "roles": ["admin"], "owner": "ada"},
    ).json()
    _, turn = stack.turn("note", key=first["key"])
    record_id = _only_call(turn)["record_id"]

    response = stack.call(second["key"], "POST", f"/v1/admin/approvals/{record_id}/approve")

    assert response.status_code == 403, response.text
    assert response.json()["error"]["code"] == "self_approval_forbidden"
    audit = stack.call(
        stack.admin, "GET", "/v1/admin/audit?action=tool_call.self_approval_refused"
    ).json()["data"]
    assert [(e["actor_key_id"], e["detail"]["owner"]) for e in audit] == [(second["id"], "ada")]
    assert _ran(stack, "write_note") == []


def test_the_servers_call_timeout_wins_and_the_call_ends_timed_out(stack: Stack) -> None:
    started = time.monotonic()
    _, turn = stack.turn("slow")

    assert _only_call(turn)["state"] == "timed_out"
    assert time.monotonic() - started < 3.5  # the server's 1 s, not the loop's 60 s


def test_a_destructive_hint_requires_approval(stack: Stack) -> None:
    conversation_id, turn = stack.turn("wipe")
    call = _only_call(turn)
    assert call["state"] == "awaiting_approval"
    with signed_in_client(stack.gateway.url, stack.admin) as client:
        queue = client.get("/admin").text
    card = queue[queue.index(f'id="call-{call["record_id"]}"') :]
    tool_facts = card[card.index('data-role="tool"') : card.index("</section>")]
    assert 'class="pill hint danger" data-role="hint"' in tool_facts
    assert ">destructive</span>" in tool_facts

    rejected = stack.call(stack.admin, "POST", f"/v1/admin/approvals/{call['record_id']}/reject")

    assert rejected.status_code == 200
    assert stack.settled(conversation_id)["tool_calls"][0]["state"] == "rejected"
    assert _ran(stack, "wipe") == []
    # An admin's explicit policy outranks the server's hint.
    stack.policy("wipe", {"requires_approval": False})
    try:
        _, waived = stack.turn("wipe")
    finally:
        stack.policy("wipe", {"requires_approval": None})
    assert _only_call(waived)["state"] == "succeeded"
    assert _ran(stack, "wipe") == [{}]


def test_every_decision_is_audited_with_its_stage(stack: Stack) -> None:
    conversation_id, turn = stack.turn("ping")
    assert _only_call(turn)["state"] == "succeeded"

    audit = stack.call(
        stack.admin, "GET", f"/v1/admin/audit?conversation={conversation_id}"
    ).json()["data"]
    checks = [e["detail"] for e in audit if e["action"] == "tool_call.policy_checked"]
    assert sorted((c["stage"], c["allowed"]) for c in checks) == [
        ("execute", True),
        ("propose", True),
    ]


def test_no_denied_path_ever_reaches_the_tool_server(stack: Stack) -> None:
    pings_before = _ran(stack, "ping").count({"n": 7})
    outcomes: dict[str, str] = {}
    outcomes["unknown"] = _only_call(stack.turn("unknown")[1])["state"]
    outcomes["held for review"] = _only_call(stack.turn("fresh")[1])["state"]
    stack.policy("ping", {"enabled": False})
    try:
        outcomes["disabled"] = _only_call(stack.turn("ping")[1])["state"]
    finally:
        stack.policy("ping", {"enabled": None})
    stack.policy("ping", {"roles": ["admin"]})
    try:
        outcomes["role"] = _only_call(stack.turn("ping")[1])["state"]
    finally:
        stack.policy("ping", {"roles": None})
    greedy = stack.turn("greedy")[1]["tool_calls"]
    outcomes["over budget"] = greedy[2]["state"]

    assert set(outcomes.values()) == {"denied_by_policy"}, outcomes
    assert _ran(stack, "fresh_tool") == []
    assert _ran(stack, "ping").count({"n": 7}) == pings_before
    assert {"n": 102} not in _ran(stack, "ping")
    assert [c["state"] for c in greedy[:2]] == ["succeeded", "succeeded"]


def test_a_degraded_servers_tools_are_temporarily_unavailable(tmp_path: Path) -> None:
    command, args = crashy_stdio_command()
    models = [
        {"name": "crash", "provider": "mock", "script": _script({"name": "crash"})},
        {"name": "pid", "provider": "mock", "script": _script({"name": "pid"})},
    ]
    server = {"name": "crashy", "transport": "stdio", "command": command, "args": args}
    with running_gateway(
        f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}",
        models=models,
        mcp_servers=[{**server, "roles": ["user"], "trusted": True}],
        tool_catalog={"retry_initial": 60, "retry_max": 60},  # stays down for the test
    ) as gateway:
        stack = Stack(gateway, tmp_path / "unused", gateway.create_key("u", ["user"]), "")
        _, crashed = stack.turn("crash")
        # The server died while the call was out: it may have run, so it is never `failed`
        # (the soak's hung tool server ran a call the gateway had recorded as failed).
        assert _only_call(crashed)["state"] == "unknown_outcome"

        _, turn = stack.turn("pid")

    call = _only_call(turn)
    assert call["state"] == "denied_by_policy"
    assert call["policy_reason"] == "Tool `pid` is temporarily unavailable."
