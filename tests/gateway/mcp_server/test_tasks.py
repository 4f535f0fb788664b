"""MCP tasks (2025-11-25): a call held for approval is a task the client polls."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import httpx2
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.dispatcher import CallOptions
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher

from tests.gateway.mcp_server.conftest import McpStack, mcp_session, text_of


@asynccontextmanager
async def task_session(
    stack: McpStack, key: str
) -> AsyncIterator[tuple[ClientSession, JSONRPCDispatcher]]:
    """The SDK's client with its dispatcher at hand: its ``call_tool`` reads only a
    ``CallToolResult``, so a task-augmented call is sent raw (as mcp_client/tasks.py does)."""
    headers = {"authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(stack.mcp_url, http_client=http) as (read, write),
    ):
        dispatcher = JSONRPCDispatcher(read, write)
        async with ClientSession(dispatcher=dispatcher) as session:
            await session.initialize()
            yield session, dispatcher


async def create(client: tuple[ClientSession, JSONRPCDispatcher], amount: int) -> types.Task:
    session, dispatcher = client
    assert session.protocol_version is not None
    params = {"name": "transfer", "arguments": {"amount": amount}, "task": {"ttl": 60_000}}
    options: CallOptions = {"headers": {MCP_PROTOCOL_VERSION_HEADER: session.protocol_version}}
    raw = await dispatcher.send_raw_request("tools/call", params, options)
    return types.CreateTaskResult.model_validate(raw, by_name=False).task


async def get(session: ClientSession, task_id: str) -> types.GetTaskResult:
    request = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id))
    return await session.send_request(request, types.GetTaskResult)


async def result(session: ClientSession, task_id: str) -> types.CallToolResult:
    params = types.GetTaskPayloadRequestParams(task_id=task_id)
    return await session.send_request(
        types.GetTaskPayloadRequest(params=params), types.CallToolResult
    )


async def decide(stack: McpStack, record_id: str, decision: str) -> None:
    async with stack.admin() as admin:
        [held] = (await admin.get("/v1/admin/approvals")).json()["data"]
        assert held["record_id"] == record_id
        decided = await admin.post(f"/v1/admin/approvals/{record_id}/{decision}")
        assert decided.status_code == 200, decided.text


def test_the_server_offers_tasks_for_tool_calls(mcp_stack: McpStack) -> None:
    async def capabilities() -> types.ServerCapabilities | None:
        async with mcp_session(mcp_stack.mcp_url, mcp_stack.user_key) as session:
            return session.server_capabilities

    offered = anyio.run(capabilities)
    assert offered is not None
    assert offered.tasks is not None
    assert offered.tasks.requests is not None
    assert offered.tasks.requests.tools is not None
    assert offered.tasks.list is not None
    assert offered.tasks.cancel is not None


def test_a_held_call_is_a_task_that_completes_once_approved(mcp_stack: McpStack) -> None:
    async def run() -> tuple[types.Task, types.GetTaskResult, types.CallToolResult]:
        async with task_session(mcp_stack, mcp_stack.user_key) as client:
            session = client[0]
            task = await create(client, 11)
            assert mcp_stack.desk.transfers == []
            await decide(mcp_stack, task.task_id, "approve")
            done = await result(session, task.task_id)
            return task, await get(session, task.task_id), done

    task, settled, done = anyio.run(run)

    assert task.status == "working"
    assert task.status_message is not None
    assert task.task_id in task.status_message
    assert settled.status == "completed"
    assert not done.is_error
    assert text_of(done) == "transferred 11"
    assert mcp_stack.desk.transfers == [11]


def test_a_rejected_task_fails_and_never_runs(mcp_stack: McpStack) -> None:
    async def run() -> tuple[types.GetTaskResult, types.CallToolResult]:
        async with task_session(mcp_stack, mcp_stack.user_key) as client:
            session = client[0]
            task = await create(client, 12)
            await decide(mcp_stack, task.task_id, "reject")
            return await get(session, task.task_id), await result(session, task.task_id)

    settled, done = anyio.run(run)

    assert settled.status == "failed"
    assert settled.status_message is not None
    assert settled.status_message.startswith("Rejected by reviewer")
    assert done.is_error
    assert mcp_stack.desk.transfers == []


def test_another_key_cannot_see_the_task(mcp_stack: McpStack) -> None:
    async def run() -> str:
        async with task_session(mcp_stack, mcp_stack.user_key) as client:
            task = await create(client, 13)
        async with mcp_session(mcp_stack.mcp_url, mcp_stack.analyst_key) as other:
            try:
                await get(other, task.task_id)
            except Exception as exc:  # the SDK raises MCPError for a JSON-RPC error
                return str(exc)
        return "visible"

    assert "No task" in anyio.run(run)


async def cancel(session: ClientSession, task_id: str) -> types.CancelTaskResult:
    request = types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id))
    return await session.send_request(request, types.CancelTaskResult)


async def listed(session: ClientSession) -> types.ListTasksResult:
    return await session.send_request(types.ListTasksRequest(), types.ListTasksResult)


def test_a_cancelled_task_reports_cancelled_and_never_runs(mcp_stack: McpStack) -> None:
    async def run() -> tuple[types.Task, types.CancelTaskResult, types.GetTaskResult, str]:
        async with task_session(mcp_stack, mcp_stack.user_key) as client:
            session = client[0]
            task = await create(client, 14)
            cancelled = await cancel(session, task.task_id)
            try:
                await cancel(session, task.task_id)
                again = "cancelled twice"
            except Exception as exc:  # the SDK raises MCPError for a JSON-RPC error
                again = str(exc)
        # Stateless: a later connection (any replica) sees what the first one did.
        async with mcp_session(mcp_stack.mcp_url, mcp_stack.user_key) as later:
            return task, cancelled, await get(later, task.task_id), again

    task, cancelled, settled, again = anyio.run(run)

    assert task.status == "working"
    assert cancelled.status == "cancelled"
    assert settled.status == "cancelled"
    assert "already cancelled" in again
    assert 14 not in mcp_stack.desk.transfers


def test_tasks_list_shows_the_keys_own_tasks_newest_first(mcp_stack: McpStack) -> None:
    async def run() -> tuple[list[str], types.ListTasksResult, types.ListTasksResult]:
        async with task_session(mcp_stack, mcp_stack.user_key) as client:
            session = client[0]
            made = [(await create(client, amount)).task_id for amount in (15, 16)]
            for task_id in made:
                await cancel(session, task_id)
            mine = await listed(session)
        async with mcp_session(mcp_stack.mcp_url, mcp_stack.analyst_key) as other:
            theirs = await listed(other)
        return made, mine, theirs

    made, mine, theirs = anyio.run(run)

    assert [task.task_id for task in mine.tasks[:2]] == made[::-1]
    assert {task.status for task in mine.tasks[:2]} == {"cancelled"}
    assert not set(made) & {task.task_id for task in theirs.tasks}
    assert mine.next_cursor is None
