"""The mcp SDK's own client against the gateway's /mcp (Streamable HTTP, stateless): list, call,
a call that needs approval as a task and as a waiting call with progress, cancel, tasks/list.
Prints one JSON line of what it saw."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.dispatcher import CallOptions
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher

URL, KEY = os.environ["GATEWAY_URL"], os.environ["GATEWAY_KEY"]


@asynccontextmanager
async def connected() -> AsyncIterator[tuple[ClientSession, JSONRPCDispatcher]]:
    headers = {"authorization": f"Bearer {KEY}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=120.0)) as http,
        streamable_http_client(f"{URL}/mcp", http_client=http) as (read, write),
    ):
        dispatcher = JSONRPCDispatcher(read, write)
        async with ClientSession(dispatcher=dispatcher) as session:
            await session.initialize()
            yield session, dispatcher


def text(result: types.CallToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def task(client: tuple[ClientSession, JSONRPCDispatcher], amount: int) -> types.Task:
    """A task-augmented call: ``ClientSession.call_tool`` reads only a ``CallToolResult``."""
    session, dispatcher = client
    assert session.protocol_version is not None
    params = {"name": "transfer", "arguments": {"amount": amount}, "task": {"ttl": 60_000}}
    options: CallOptions = {"headers": {MCP_PROTOCOL_VERSION_HEADER: session.protocol_version}}
    raw = await dispatcher.send_raw_request("tools/call", params, options)
    return types.CreateTaskResult.model_validate(raw, by_name=False).task


async def get(session: ClientSession, task_id: str) -> types.GetTaskResult:
    request = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id))
    return await session.send_request(request, types.GetTaskResult)


async def main(case: str) -> dict[str, Any]:
    async with connected() as client:
        session = client[0]
        if case == "list":
            return {"tools": sorted(tool.name for tool in (await session.list_tools()).tools)}
        if case == "call":
            return {"text": text(await session.call_tool("lookup", {"word": "mcp"}))}
        if case == "waiting":
            progress: list[str] = []

            async def heard(done: float, total: float | None, message: str | None) -> None:
                progress.append(message or "")

            result = await session.call_tool("transfer", {"amount": 21}, progress_callback=heard)
            return {"text": text(result), "progress": progress[:1]}
        created = await task(client, 22 if case == "task" else 23)
        if case == "task":
            params = types.GetTaskPayloadRequestParams(task_id=created.task_id)
            request = types.GetTaskPayloadRequest(params=params)
            result = await session.send_request(request, types.CallToolResult)
            settled = await get(session, created.task_id)
            return {"created": created.status, "status": settled.status, "text": text(result)}
        cancel = types.CancelTaskRequest(
            params=types.CancelTaskRequestParams(task_id=created.task_id)
        )
        cancelled = await session.send_request(cancel, types.CancelTaskResult)
        listed = await session.send_request(types.ListTasksRequest(), types.ListTasksResult)
        mine = {t.task_id: t.status for t in listed.tasks}
    async with connected() as later:  # stateless: a new connection sees the same task
        seen = await get(later[0], created.task_id)
    return {"cancelled": cancelled.status, "later": seen.status, "listed": mine[created.task_id]}


if __name__ == "__main__":
    print(json.dumps(anyio.run(main, sys.argv[1])))
