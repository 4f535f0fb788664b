"""Task-augmented tool calls (MCP 2025-11-25 tasks): create, poll until done, fetch, or cancel.

The SDK (2.3) types the task messages but its ``tools/call`` path accepts only a ``CallToolResult``,
so the creating request goes through the session's dispatcher and is read as a
``CreateTaskResult`` here; ``tasks/get``, ``tasks/result`` and ``tasks/cancel`` use the session's
typed ``send_request``.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass

import mcp_types as types
import structlog
from mcp import ClientSession
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher

from mcp_client.backend import ToolCall
from mcp_client.hooks import ToolProgress

log = structlog.get_logger("mcp_client.tasks")
_TERMINAL = frozenset({"completed", "failed", "cancelled"})
_TTL_MARGIN_SECONDS = 60.0  # the server keeps the result a while after the call's own limit
_CANCEL_TIMEOUT_SECONDS = 5.0


class TaskCancelled(Exception):
    """The server reports the task cancelled (not by us): there is no result to fetch."""


@dataclass(frozen=True, slots=True)
class TaskRun:
    session: ClientSession
    dispatcher: JSONRPCDispatcher
    call: ToolCall
    progress_token: str
    poll_interval: float  # seconds, when the server suggests none

    def remaining(self) -> float:
        return self.call.deadline - asyncio.get_running_loop().time()


def offers_tool_tasks(session: ClientSession) -> bool:
    """The server's capabilities say it runs ``tools/call`` as tasks."""
    tasks = session.server_capabilities.tasks if session.server_capabilities else None
    requests = tasks.requests if tasks else None
    return bool(requests and requests.tools and requests.tools.call is not None)


async def call_as_task(run: TaskRun) -> types.CallToolResult:
    """Run the call as a task and return its result.

    Raises MCPError (REQUEST_TIMEOUT when the deadline passes: the task is then cancelled),
    TaskCancelled, or whatever the session raises for a dead connection.
    """
    created = await _create(run)
    task = created.task_id
    try:
        await _poll_until_settled(run, created)
        if run.remaining() <= 0:
            raise MCPError(code=types.REQUEST_TIMEOUT, message="the task ran past its deadline")
        return await run.session.send_request(
            types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task)),
            types.CallToolResult,
            request_read_timeout_seconds=run.remaining(),
        )
    except (MCPError, asyncio.CancelledError) as exc:
        if not isinstance(exc, MCPError) or exc.error.code == types.REQUEST_TIMEOUT:
            await asyncio.shield(_cancel(run.session, task))
        raise


async def _create(run: TaskRun) -> types.Task:
    call = run.call
    ttl_ms = math.ceil((call.limit + _TTL_MARGIN_SECONDS) * 1000)
    params = {
        "name": call.name,
        "arguments": call.arguments,
        "task": {"ttl": ttl_ms},
        "_meta": {"progressToken": run.progress_token},
    }
    options: CallOptions = {"timeout": max(run.remaining(), 0.001)}
    if run.session.protocol_version:
        options["headers"] = {MCP_PROTOCOL_VERSION_HEADER: run.session.protocol_version}
    raw = await run.dispatcher.send_raw_request("tools/call", params, options)
    created = types.CreateTaskResult.model_validate(raw, by_name=False)
    await _report(run, created.task)
    return created.task


async def _poll_until_settled(run: TaskRun, created: types.Task) -> None:
    """Poll ``tasks/get`` until the task is done or needs input (``tasks/result`` carries that)."""
    task_id, last_status = created.task_id, created.status
    interval = created.poll_interval / 1000 if created.poll_interval else run.poll_interval
    if last_status == "cancelled":
        raise TaskCancelled(created.status_message or "the server cancelled the task")
    if last_status in _TERMINAL or last_status == "input_required":
        return
    while True:
        wait = min(interval, run.remaining())
        if wait <= 0:
            raise MCPError(code=types.REQUEST_TIMEOUT, message="the task ran past its deadline")
        await asyncio.sleep(wait)
        task = await run.session.send_request(
            types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id)),
            types.GetTaskResult,
            request_read_timeout_seconds=max(run.remaining(), 0.001),
        )
        if task.status != last_status:
            last_status = task.status
            await _report(run, task)
        if task.status == "cancelled":
            raise TaskCancelled(task.status_message or "the server cancelled the task")
        if task.status in _TERMINAL or task.status == "input_required":
            return
        if task.poll_interval:
            interval = task.poll_interval / 1000


async def _report(run: TaskRun, task: types.Task) -> None:
    hook = run.call.hooks.on_progress
    if hook is None:
        return
    try:
        await hook(ToolProgress(None, message=task.status_message, task_status=task.status))
    except Exception as exc:  # a listener's bug must not fail the call
        log.warning("progress_hook_failed", error=type(exc).__name__)


async def _cancel(session: ClientSession, task_id: str) -> None:
    try:
        await session.send_request(
            types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id)),
            types.CancelTaskResult,
            request_read_timeout_seconds=_CANCEL_TIMEOUT_SECONDS,
        )
    except Exception as exc:  # already finished, or the connection is gone: nothing left to stop
        log.info("mcp_task_cancel_failed", task=task_id, error=type(exc).__name__)
