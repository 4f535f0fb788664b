"""A client that cancels or goes away ends the gateway's call, and the tool server's."""

from __future__ import annotations

import anyio
import httpx2

from tests.gateway.mcp_server.conftest import McpStack, mcp_session, text_of
from tests.support.waiting import eventually


def hang_outcome(stack: McpStack) -> list[str]:
    headers = {"authorization": f"Bearer {stack.admin_key}"}
    params = {"tool": "hang", "action": "tool_call.failed"}
    response = httpx2.get(f"{stack.gateway.v1}/admin/audit", headers=headers, params=params)
    return [event["detail"]["result"] for event in response.json()["data"]]


def test_a_client_that_goes_away_cancels_the_running_call(mcp_stack: McpStack) -> None:
    desk = mcp_stack.desk

    async def run() -> None:
        async with (
            mcp_session(mcp_stack.mcp_url, mcp_stack.user_key) as session,
            anyio.create_task_group() as group,
        ):
            group.start_soon(session.call_tool, "hang", {})
            await anyio.to_thread.run_sync(desk.hang_started.wait, 20)
            group.cancel_scope.cancel()

    anyio.run(run)

    eventually(lambda: bool(hang_outcome(mcp_stack)), "the gateway ended the abandoned call")
    [result] = hang_outcome(mcp_stack)
    assert "cancelled the call (or went away)" in result
    assert desk.hang_cancelled.wait(20), "the tool server was never told to stop"


def test_a_cancelled_call_stops_while_the_session_goes_on(mcp_stack: McpStack) -> None:
    desk = mcp_stack.desk

    async def run() -> str:
        async with mcp_session(mcp_stack.mcp_url, mcp_stack.user_key) as session:
            with anyio.move_on_after(30) as waiting:
                async with anyio.create_task_group() as group:
                    group.start_soon(session.call_tool, "hang", {})
                    await anyio.to_thread.run_sync(desk.hang_started.wait, 20)
                    group.cancel_scope.cancel()
                # The same session is still in use while the tool server stops.
                await anyio.to_thread.run_sync(desk.hang_cancelled.wait, 20)
            assert not waiting.cancelled_caught
            result = await session.call_tool("lookup", {"word": "after"})
            return text_of(result)

    assert anyio.run(run) == "after: a thing"
    assert desk.hang_cancelled.is_set()
