"""``tools/list`` and ``tools/call`` over MCP, as the mcp SDK's client sees them."""

from __future__ import annotations

from typing import Any

import anyio
import httpx2

from tests.gateway.mcp_server.conftest import McpStack, mcp_session


def listed(stack: McpStack, key: str, url: str | None = None) -> list[str]:
    async def names() -> list[str]:
        async with mcp_session(url or stack.mcp_url, key) as session:
            return sorted(tool.name for tool in (await session.list_tools()).tools)

    return anyio.run(names)


def over_http(stack: McpStack, key: str, params: dict[str, str] | None = None) -> list[str]:
    headers = {"authorization": f"Bearer {key}"}
    response = httpx2.get(f"{stack.gateway.v1}/tools", headers=headers, params=params)
    assert response.status_code == 200, response.text
    return sorted(tool["name"] for tool in response.json()["data"])


def test_two_keys_see_exactly_what_v1_tools_lists_for_each(mcp_stack: McpStack) -> None:
    user = listed(mcp_stack, mcp_stack.user_key)
    analyst = listed(mcp_stack, mcp_stack.analyst_key)

    assert user == ["count", "hang", "lookup", "transfer", "wipe"]
    assert analyst == ["count", "hang", "lookup", "payroll", "transfer", "wipe"]
    assert user == over_http(mcp_stack, mcp_stack.user_key)
    assert analyst == over_http(mcp_stack, mcp_stack.analyst_key)
    bundled = listed(mcp_stack, mcp_stack.user_key, f"{mcp_stack.mcp_url}?bundle=reading")
    assert bundled == ["lookup"] == over_http(mcp_stack, mcp_stack.user_key, {"bundle": "reading"})


def test_an_admin_policy_applies_to_the_list_at_once(mcp_stack: McpStack) -> None:
    headers = {"authorization": f"Bearer {mcp_stack.admin_key}"}
    disabled = httpx2.put(
        f"{mcp_stack.gateway.v1}/admin/tools/wipe/policy", headers=headers, json={"enabled": False}
    )
    assert disabled.status_code == 200, disabled.text

    assert "wipe" not in listed(mcp_stack, mcp_stack.user_key)
    assert listed(mcp_stack, mcp_stack.user_key) == over_http(mcp_stack, mcp_stack.user_key)


def test_tools_carry_their_schemas_and_annotations(mcp_stack: McpStack) -> None:
    async def tools() -> dict[str, Any]:
        async with mcp_session(mcp_stack.mcp_url, mcp_stack.user_key) as session:
            return {tool.name: tool for tool in (await session.list_tools()).tools}

    by_name = anyio.run(tools)
    transfer = by_name["transfer"]
    assert transfer.input_schema["properties"]["amount"]["type"] == "integer"
    assert transfer.input_schema["required"] == ["amount"]
    assert transfer.description == "Move money (a reviewer approves each transfer)."
    assert transfer.meta is not None
    assert transfer.meta["llm-gateway/tool"]["requires_approval"] is True
    assert transfer.meta["llm-gateway/tool"]["server"] == "desk"
    lookup = by_name["lookup"].annotations
    assert lookup is not None
    assert lookup.read_only_hint is True
