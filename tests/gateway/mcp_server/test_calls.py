"""``tools/call`` under the tool loop's governance: policy, approval, audit, usage."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import httpx2
import pytest
from mcp import types

from tests.gateway.mcp_server.conftest import (
    Desk,
    McpStack,
    call,
    mcp_session,
    record_of,
    stack_on,
    text_of,
)


def audit_actions(stack: McpStack, tool: str, record_id: str) -> list[str]:
    headers = {"authorization": f"Bearer {stack.admin_key}"}
    params: dict[str, str | int] = {"tool": tool, "limit": 200}
    response = httpx2.get(f"{stack.gateway.v1}/admin/audit", headers=headers, params=params)
    assert response.status_code == 200, response.text
    events = response.json()["data"]
    return [e["action"] for e in reversed(events) if e["record_id"] == record_id]


def test_a_call_runs_on_the_tool_server_and_is_audited(mcp_stack: McpStack) -> None:
    result = call(mcp_stack, mcp_stack.user_key, "lookup", {"word": "gateway"})

    assert not result.is_error
    assert text_of(result) == "gateway: a thing"
    record = record_of(result)
    assert record["state"] == "succeeded"
    actions = audit_actions(mcp_stack, "lookup", record["record_id"])
    assert actions[:2] == ["tool_call.proposed", "tool_call.policy_checked"]
    assert "tool_call.succeeded" in actions


def test_calls_refused_by_policy_never_reach_the_tool_server(mcp_stack: McpStack) -> None:
    headers = {"authorization": f"Bearer {mcp_stack.admin_key}"}
    policy = f"{mcp_stack.gateway.v1}/admin/tools/wipe/policy"
    assert httpx2.put(policy, headers=headers, json={"enabled": False}).status_code == 200
    disabled = call(mcp_stack, mcp_stack.user_key, "wipe", {})
    not_for_users = call(mcp_stack, mcp_stack.user_key, "payroll", {})
    bad_arguments = call(mcp_stack, mcp_stack.user_key, "transfer", {"amount": "lots"})

    assert "disabled by an administrator" in text_of(disabled)
    assert "not allowed for this caller's roles" in text_of(not_for_users)
    assert "Invalid arguments for `transfer`" in text_of(bad_arguments)
    for result in (disabled, not_for_users, bad_arguments):
        assert result.is_error
        assert record_of(result)["state"] == "denied_by_policy"
    assert mcp_stack.desk.transfers == []


def test_a_missing_or_wrong_key_gets_an_openai_style_401(mcp_stack: McpStack) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for headers in ({}, {"authorization": "Bearer gw-not-a-key"}):
        response = httpx2.post(mcp_stack.mcp_url, json=body, headers=headers)
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "invalid_api_key"
        assert response.headers["www-authenticate"] == "Bearer"
    unknown_bundle = httpx2.post(
        f"{mcp_stack.mcp_url}?bundle=nope",
        json=body,
        headers={"authorization": f"Bearer {mcp_stack.user_key}"},
    )
    assert unknown_bundle.status_code == 400
    assert unknown_bundle.json()["error"]["param"] == "bundle"


@pytest.fixture
def limited(sqlite_url: str, desk: tuple[Desk, str]) -> Iterator[McpStack]:
    """A gateway whose keys may make one request a minute."""
    limits = {"default": {"requests_per_minute": 1}}
    with stack_on(sqlite_url, desk, key_limits=limits) as stack:
        yield stack


def test_calls_count_against_the_keys_limits(limited: McpStack) -> None:
    first = call(limited, limited.user_key, "lookup", {"word": "one"})
    second = call(limited, limited.user_key, "lookup", {"word": "two"})

    assert not first.is_error
    assert second.is_error
    assert "Retry after" in text_of(second)
    assert record_of(first)["state"] == "succeeded"


def test_the_tool_servers_progress_reaches_the_mcp_client(mcp_stack: McpStack) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async def run() -> types.CallToolResult:
        async with mcp_session(mcp_stack.mcp_url, mcp_stack.user_key) as session:
            return await session.call_tool("count", {}, progress_callback=progress)

    result = anyio.run(run)

    assert text_of(result) == "counted"
    # Thinned to tool_loop.progress_interval_seconds, as in a conversation; the last step always
    # comes through.
    assert seen
    assert seen[-1] == (3, 3, "step 3 of 3")
    assert [step for step, _, _ in seen] == sorted(step for step, _, _ in seen)
