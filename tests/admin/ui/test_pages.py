"""The admin pages over HTTP: the queue with its context, decisions, keys, audit, usage, tools."""

from __future__ import annotations

import re

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.support.admin_ui import csrf_token, signed_in_client
from tests.support.tool_loop import LoopStack


def start_turn(stack: LoopStack, model: str) -> tuple[str, str]:
    """Starts a turn that stops at a held call; returns the conversation and the held call's
    record_id."""
    with stack.client(stack.user_key) as client:
        conversation_id = client.post("/v1/conversations", json={"model": model}).json()["id"]
        turn = client.post(f"/v1/conversations/{conversation_id}/messages", json={"content": "go"})
    [held] = [c for c in turn.json()["tool_calls"] if c["state"] == "awaiting_approval"]
    return conversation_id, held["record_id"]


def card_of(html: str, record_id: str) -> str:
    pattern = rf'<article class="card call[^"]*" id="call-{record_id}".*?</article>'
    match = re.search(pattern, html, re.S)
    assert match, "the call is not in the queue"
    return match.group(0)


def test_a_held_call_is_shown_with_its_context(ui_stack: LoopStack) -> None:
    _, record_id = start_turn(ui_stack, "injected")
    with signed_in_client(ui_stack.gateway.url, ui_stack.admin_key) as client:
        card = card_of(client.get("/admin").text, record_id)
    assert "transfer_money" in card
    assert "requested by product-team" in card
    assert "&#34;amount&#34;: 999" in card or "&quot;amount&quot;: 999" in card
    assert "server: local" in card
    assert "<code>read_email</code>" in card  # the result the model read just before
    assert "IGNORE PREVIOUS INSTRUCTIONS" in card  # ... shown in the excerpt, escaped
    assert "data-expires=" in card


def test_approving_in_the_ui_resumes_the_conversation(ui_stack: LoopStack) -> None:
    conversation_id, record_id = start_turn(ui_stack, "loop")
    with signed_in_client(ui_stack.gateway.url, ui_stack.admin_key) as client:
        token = csrf_token(client.get("/admin").text)
        decided = client.post(f"/admin/calls/{record_id}/approve", data={"csrf_token": token})
        assert decided.status_code == 303
        assert decided.headers["location"] == "/admin?done=approved"
        again = client.post(f"/admin/calls/{record_id}/approve", data={"csrf_token": token})
    assert again.status_code == 409
    assert "not awaiting a decision" in again.text
    with (
        ui_stack.client(ui_stack.user_key) as user,
        user.stream("GET", f"/v1/conversations/{conversation_id}/events") as events,
    ):
        lines = list(events.iter_lines())
    assert 'data: {"status":"completed"}' in lines
    assert ui_stack.catalog.calls[-1] == ("transfer_money", {"amount": 5})


def test_rejecting_in_the_ui_tells_the_model_the_reason(ui_stack: LoopStack) -> None:
    conversation_id, record_id = start_turn(ui_stack, "loop")
    with signed_in_client(ui_stack.gateway.url, ui_stack.admin_key) as client:
        token = csrf_token(client.get("/admin").text)
        decided = client.post(
            f"/admin/calls/{record_id}/reject",
            data={"csrf_token": token, "reason": "not this month"},
        )
        assert decided.headers["location"] == "/admin?done=rejected"
        page = client.get("/admin?done=rejected").text
    assert "Rejected: the model is told the reason" in page
    assert "not this month" in page  # in the recently decided table
    with ui_stack.client(ui_stack.admin_key) as admin:
        audit = admin.get("/v1/admin/audit", params={"conversation": conversation_id}).json()
    rejected = [e for e in audit["data"] if e["action"] == "tool_call.rejected"]
    assert len(rejected) == 1


def decisions_counted(stack: LoopStack, decision: str) -> float:
    metrics = httpx.get(f"{stack.gateway.url}/metrics").text
    name = "llm_gateway_approval_decision_seconds_count"
    return sum(
        sample.value
        for family in text_string_to_metric_families(metrics)
        for sample in family.samples
        if sample.name == name and sample.labels == {"decision": decision}
    )


def test_a_decision_in_the_ui_is_measured_like_one_through_the_api(ui_stack: LoopStack) -> None:
    before = {verdict: decisions_counted(ui_stack, verdict) for verdict in ("approved", "rejected")}
    _, approved = start_turn(ui_stack, "loop")
    _, rejected = start_turn(ui_stack, "loop")
    with signed_in_client(ui_stack.gateway.url, ui_stack.admin_key) as client:
        token = csrf_token(client.get("/admin").text)
        client.post(f"/admin/calls/{approved}/approve", data={"csrf_token": token})
        client.post(f"/admin/calls/{rejected}/reject", data={"csrf_token": token, "reason": "no"})

    assert decisions_counted(ui_stack, "approved") == before["approved"] + 1
    assert decisions_counted(ui_stack, "rejected") == before["rejected"] + 1


def test_keys_page_shows_a_new_key_once_and_revokes(ui_stack: LoopStack) -> None:
    with signed_in_client(ui_stack.gateway.url, ui_stack.admin_key) as client:
        token = csrf_token(client.get("/admin/keys").text)
        created = client.post(
            "/admin/keys", data={"name": "nightly", "roles": "user, analyst", "csrf_token": token}
        )
        [key] = re.findall(r'<pre class="secret" id="new-key">(gw-[^<]+)</pre>', created.text)
        listing = client.get("/admin/keys").text
        assert key not in listing
        assert '<td data-label="Roles">analyst, user</td>' in listing
        bad = client.post(
            "/admin/keys", data={"name": "x", "roles": "Not A Role", "csrf_token": token}
        )
        assert bad.status_code == 400
    with ui_stack.client(key) as user:
        assert user.get("/v1/tools").status_code == 200


def test_audit_usage_and_tools_pages_render(ui_stack: LoopStack) -> None:
    start_turn(ui_stack, "loop")
    with signed_in_client(ui_stack.gateway.url, ui_stack.admin_key) as client:
        audit = client.get("/admin/audit", params={"tool": "transfer_money"})
        nothing = client.get("/admin/audit", params={"tool": "no-such-tool"})
        usage = client.get("/admin/usage", params={"days": 7})
        tools = client.get("/admin/tools")
        servers = client.get("/admin/servers")
    assert audit.status_code == 200
    assert "tool_call.awaiting_approval" in audit.text
    assert "No audit events match these filters" in nothing.text
    assert usage.status_code == 200
    assert tools.status_code == 200
    assert "requires approval" in tools.text
    assert "No MCP servers are configured" in servers.text
    assert "No configured provider receives tool schemas" in tools.text


def offered(stack: LoopStack) -> set[str]:
    with stack.client(stack.user_key) as user:
        return {tool["name"] for tool in user.get("/v1/tools").json()["data"]}


def test_a_tool_is_disabled_and_enabled_from_the_tools_page(ui_stack: LoopStack) -> None:
    with signed_in_client(ui_stack.gateway.url, ui_stack.admin_key) as client:
        token = csrf_token(client.get("/admin/tools").text)
        forged = client.post("/admin/tools/read_email/enabled", data={"enabled": "false"})
        assert forged.status_code == 403
        assert "read_email" in offered(ui_stack)
        disabled = client.post(
            "/admin/tools/read_email/enabled", data={"enabled": "false", "csrf_token": token}
        )
        assert disabled.status_code == 303
        assert '<span class="pill warn">disabled</span>' in client.get("/admin/tools").text
        assert "read_email" not in offered(ui_stack)
        client.post(
            "/admin/tools/read_email/enabled", data={"enabled": "true", "csrf_token": token}
        )
    assert "read_email" in offered(ui_stack)


def test_keys_page_records_an_owner_and_refuses_revoking_the_signed_in_key(
    ui_stack: LoopStack,
) -> None:
    with ui_stack.client(ui_stack.admin_key) as api:
        keys = api.get("/v1/admin/keys").json()["data"]
    mine = next(key["id"] for key in keys if key["name"] == "reviewer")
    with signed_in_client(ui_stack.gateway.url, ui_stack.admin_key) as client:
        token = csrf_token(client.get("/admin/keys").text)
        created = client.post(
            "/admin/keys",
            data={"name": "etl", "roles": "user", "owner": "data-team", "csrf_token": token},
        )
        assert '<td data-label="Owner">data-team</td>' in created.text
        refused = client.post(f"/admin/keys/{mine}/revoke", data={"csrf_token": token})
        assert refused.status_code == 400
        assert "cannot revoke the key you are signed in with" in refused.text
        out_of_range = client.post("/admin/keys/99999999999999/revoke", data={"csrf_token": token})
        assert out_of_range.status_code < 500
        assert client.get("/admin/audit", params={"before": 10**20}).status_code < 500
    with ui_stack.client(ui_stack.admin_key) as api:
        still = next(key for key in api.get("/v1/admin/keys").json()["data"] if key["id"] == mine)
    assert still["revoked"] is False
