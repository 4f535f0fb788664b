"""A tool server that runs tools as tasks (MCP 2025-11-25), built on the SDK's lowlevel Server.

The SDK (2.3) types tasks but serves none, so this server adds them the way the SDK lets a server
add protocol: a middleware answers a task-augmented ``tools/call`` with a ``CreateTaskResult`` and
advertises ``capabilities.tasks``; ``tasks/get``, ``tasks/result`` and ``tasks/cancel`` are
request handlers. Tool bodies run in the server's event loop, report progress on the caller's
progress token, and count their executions.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError

RELATED_TASK = "io.modelcontextprotocol/related-task"
POLL_MS = 20
STEP_SECONDS = 0.02


def _tool(name: str, support: str | None, properties: dict[str, Any]) -> types.Tool:
    execution = types.ToolExecution(task_support=support) if support else None  # type: ignore[arg-type]
    return types.Tool(
        name=name,
        description=f"the {name} tool",
        input_schema={"type": "object", "properties": properties},
        execution=execution,
    )


TOOLS = [
    _tool("slow_sum", "required", {"a": {"type": "integer"}, "b": {"type": "integer"}}),
    _tool("forever", "required", {}),
    _tool("either_way", "optional", {}),
    _tool("plain", None, {}),
]


def _now() -> str:
    return datetime.now(UTC).isoformat()


@dataclass
class _Task:
    task_id: str
    status: str = "working"
    status_message: str | None = None
    created_at: str = field(default_factory=_now)
    last_updated_at: str = field(default_factory=_now)
    result: types.CallToolResult | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    job: asyncio.Task[None] | None = None

    def settle(self, status: str, message: str | None = None) -> None:
        self.status, self.status_message, self.last_updated_at = status, message, _now()
        self.done.set()

    def wire(self) -> dict[str, Any]:
        task = types.Task(
            task_id=self.task_id,
            status=self.status,  # type: ignore[arg-type]
            status_message=self.status_message,
            created_at=self.created_at,
            last_updated_at=self.last_updated_at,
            ttl=60_000,
            poll_interval=POLL_MS,
        )
        return task.model_dump(by_alias=True, mode="json", exclude_none=True)


@dataclass
class TaskServer:
    """``executions`` counts tool bodies started; the events let tests wait on the server."""

    advertise_tasks: bool = True
    executions: list[str] = field(default_factory=list)
    direct_calls: list[str] = field(default_factory=list)
    forever_started: threading.Event = field(default_factory=threading.Event)
    forever_cancelled: threading.Event = field(default_factory=threading.Event)
    tasks: dict[str, _Task] = field(default_factory=dict)

    def build(self) -> Server[Any]:
        server: Server[Any] = Server(
            "tasks", on_list_tools=self._list_tools, on_call_tool=self._call_directly
        )
        server.middleware.append(self._middleware)
        server.add_request_handler("tasks/get", types.GetTaskRequestParams, self._get)
        server.add_request_handler("tasks/result", types.GetTaskPayloadRequestParams, self._result)
        server.add_request_handler("tasks/cancel", types.CancelTaskRequestParams, self._cancel)
        return server

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def _call_directly(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name in ("slow_sum", "forever"):
            # The spec: a tool that requires a task refuses a plain call with -32601.
            raise MCPError(code=types.METHOD_NOT_FOUND, message=f"{params.name} requires a task")
        self.direct_calls.append(params.name)
        return types.CallToolResult(content=[types.TextContent(type="text", text="ran directly")])

    async def _middleware(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        params = ctx.params if isinstance(ctx.params, Mapping) else {}
        if ctx.method == "tools/call" and "task" in params:
            return self._create(ctx.session, params)
        result = await call_next(ctx)
        if ctx.method == "initialize" and self.advertise_tasks and isinstance(result, dict):
            capabilities = result.setdefault("capabilities", {})
            capabilities["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        return result

    def _create(self, session: ServerSession, params: Mapping[str, Any]) -> dict[str, Any]:
        task = _Task(task_id=uuid.uuid4().hex)
        self.tasks[task.task_id] = task
        meta = params.get("_meta") or {}
        token = meta.get("progressToken")
        name, arguments = str(params["name"]), dict(params.get("arguments") or {})
        task.job = asyncio.create_task(self._run(session, task, name, arguments, token))
        return {"task": task.wire()}

    async def _run(
        self,
        session: ServerSession,
        task: _Task,
        name: str,
        arguments: dict[str, Any],
        token: str | int | None,
    ) -> None:
        self.executions.append(name)
        try:
            text = await self._body(session, name, arguments, token)
        except asyncio.CancelledError:
            if name == "forever":
                self.forever_cancelled.set()
            task.settle("cancelled", "cancelled by the client")
            raise
        task.result = types.CallToolResult(content=[types.TextContent(type="text", text=text)])
        task.settle("completed")

    async def _body(
        self,
        session: ServerSession,
        name: str,
        arguments: dict[str, Any],
        token: str | int | None,
    ) -> str:
        if name == "forever":
            self.forever_started.set()
            await asyncio.Event().wait()
        if name == "either_way":
            return "ran as a task"
        for step in range(1, 4):
            await asyncio.sleep(STEP_SECONDS)
            if token is not None:
                await session.send_progress_notification(token, step, 3, f"step {step} of 3")
        return f"sum={arguments['a'] + arguments['b']}"

    def _task(self, task_id: str) -> _Task:
        task = self.tasks.get(task_id)
        if task is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"no task {task_id}")
        return task

    async def _get(
        self, ctx: ServerRequestContext[Any], params: types.GetTaskRequestParams
    ) -> dict[str, Any]:
        return self._task(params.task_id).wire()

    async def _result(
        self, ctx: ServerRequestContext[Any], params: types.GetTaskPayloadRequestParams
    ) -> dict[str, Any]:
        task = self._task(params.task_id)
        await task.done.wait()
        if task.result is None:
            raise MCPError(code=types.INTERNAL_ERROR, message=f"task {task.status}")
        result = task.result.model_dump(by_alias=True, mode="json", exclude_none=True)
        result["_meta"] = {RELATED_TASK: {"taskId": task.task_id}}
        return result

    async def _cancel(
        self, ctx: ServerRequestContext[Any], params: types.CancelTaskRequestParams
    ) -> dict[str, Any]:
        task = self._task(params.task_id)
        if task.job is not None and not task.job.done():
            task.job.cancel()
            await asyncio.gather(task.job, return_exceptions=True)
        return task.wire()
