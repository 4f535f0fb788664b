"""MCP tasks (2025-11-25) for ``tools/call``: a call held for approval becomes a task.

The SDK (2.3) types tasks but serves none, so they are added the way it lets a server add
protocol: a middleware answers a task-augmented ``tools/call`` with a ``CreateTaskResult`` and
advertises ``capabilities.tasks``; ``tasks/get`` and ``tasks/result`` are request handlers.

The task is the tool call's own record (task id = ``record_id``), so it needs no state of its
own and any replica answers for it. Approved, the call runs at the next look at the task
(``tasks/get`` or ``tasks/result``, whichever replica takes it; the executor runs it once); it
completes with the tool's result, or fails when rejected, expired or refused by policy.

``tasks/list`` pages through the key's own MCP calls, newest first. ``tasks/cancel`` settles a
call still waiting (for its approval, or approved and not yet run) as ``cancelled``, on any
replica; a call already running is stopped only by the replica running it (it then fails, its
result saying it was cancelled: the tool server may have acted), others refuse.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import datetime
from time import perf_counter
from typing import Any

import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from chat_service.tool_call_view import SETTLED, CallState, ToolCallView
from gateway.mcp_server.cancellation import cancel_once
from gateway.mcp_server.config import McpServerSettings
from gateway.mcp_server.handlers import McpHandlers, caller_of, result_of

RELATED_TASK = "io.modelcontextprotocol/related-task"
# The call never ran: the task failed. Any other settled call completed, its result telling how.
_FAILED = frozenset({CallState.REJECTED, CallState.EXPIRED, CallState.DENIED_BY_POLICY})
_CAPABILITY: dict[str, Any] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
LIST_PAGE = 50


class McpTasks:
    def __init__(self, handlers: McpHandlers, settings: McpServerSettings) -> None:
        self._handlers = handlers
        self._settings = settings
        self._runs: dict[str, asyncio.Task[ToolCallView]] = {}  # approved calls running here

    def install(self, server: Server[Any]) -> None:
        server.middleware.append(self._middleware)
        server.add_request_handler("tasks/get", types.GetTaskRequestParams, self._get)
        server.add_request_handler("tasks/result", types.GetTaskPayloadRequestParams, self._result)
        server.add_request_handler("tasks/list", types.PaginatedRequestParams, self._list)
        server.add_request_handler("tasks/cancel", types.CancelTaskRequestParams, self._cancel)

    async def _middleware(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        params = ctx.params if isinstance(ctx.params, Mapping) else {}
        if ctx.method == "tools/call" and params.get("task") is not None:
            return await self._create(ctx, types.CallToolRequestParams.model_validate(params))
        result = await call_next(ctx)
        if ctx.method == "initialize" and isinstance(result, dict):
            result.setdefault("capabilities", {})["tasks"] = _CAPABILITY
        return result

    async def _create(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> dict[str, Any]:
        caller = caller_of(ctx)
        started = perf_counter()
        call = await self._handlers.start(caller, params)
        if isinstance(call, types.CallToolResult):  # refused before it became a call
            message = "; ".join(b.text for b in call.content if isinstance(b, types.TextContent))
            raise MCPError(code=types.INVALID_REQUEST, message=message)
        self._handlers.record_usage(caller.principal, call, started)
        return {"task": self._wire(await self._advance(call))}

    async def _get(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetTaskRequestParams
    ) -> dict[str, Any]:
        return self._wire(await self._advance(await self._owned(ctx, params.task_id)))

    async def _result(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetTaskPayloadRequestParams
    ) -> dict[str, Any]:
        """Blocks until the call is settled (the spec's ``tasks/result``)."""
        call = await self._owned(ctx, params.task_id)
        while call.state not in SETTLED:
            running = self._runs.get(call.record_id)
            if running is not None:
                # Waited on, never cancelled from here: the run is the task's, not this request's.
                await asyncio.wait([running])
                call = await self._owned(ctx, params.task_id)
                continue
            await asyncio.sleep(self._settings.approval_poll_seconds)
            call = await self._advance(await self._owned(ctx, params.task_id))
        result = result_of(call).model_dump(by_alias=True, mode="json", exclude_none=True)
        result.setdefault("_meta", {})[RELATED_TASK] = {"taskId": call.record_id}
        return result

    async def _list(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> dict[str, Any]:
        offset = _offset(params.cursor if params is not None else None)
        principal = caller_of(ctx).principal
        calls = await self._handlers.calls.owned_page(principal, offset, LIST_PAGE + 1)
        listed: dict[str, Any] = {"tasks": [self._wire(call) for call in calls[:LIST_PAGE]]}
        if len(calls) > LIST_PAGE:
            listed["nextCursor"] = str(offset + LIST_PAGE)
        return listed

    async def _cancel(
        self, ctx: ServerRequestContext[Any, Any], params: types.CancelTaskRequestParams
    ) -> dict[str, Any]:
        call = await self._owned(ctx, params.task_id)
        _refuse_settled(call)
        cancelled = await self._handlers.calls.cancel_waiting(call, caller_of(ctx).principal)
        if cancelled is not None:
            return self._wire(cancelled)
        running = self._runs.get(call.record_id)
        if running is not None:
            cancel_once(running)
            await asyncio.wait([running])  # it settles (failed) as its run ends
            return self._wire(await self._owned(ctx, params.task_id))
        _refuse_settled(await self._owned(ctx, params.task_id))  # it settled meanwhile
        raise MCPError(
            code=types.INVALID_PARAMS,
            message=f"Task `{call.record_id}` is running on another replica: it cannot be "
            "cancelled from here.",
        )

    async def _owned(self, ctx: ServerRequestContext[Any, Any], task_id: str) -> ToolCallView:
        call = await self._handlers.calls.owned(task_id, caller_of(ctx).principal)
        if call is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"No task `{task_id}`.")
        return call

    async def _advance(self, call: ToolCallView) -> ToolCallView:
        """Starts an approved call here (detached: it runs to its end whoever is listening)."""
        if call.state is CallState.APPROVED and call.record_id not in self._runs:
            run = asyncio.ensure_future(self._handlers.calls.run_approved(call))
            self._runs[call.record_id] = run
            run.add_done_callback(lambda _: self._runs.pop(call.record_id, None))
        return call

    def _wire(self, call: ToolCallView) -> dict[str, Any]:
        task = types.Task(
            task_id=call.record_id,
            status=_status(call),
            status_message=_message(call),
            created_at=call.created_at.isoformat(),
            last_updated_at=_updated(call).isoformat(),
            ttl=None,  # the record stays with the audit trail
            poll_interval=round(self._settings.approval_poll_seconds * 1000),
        )
        wire = task.model_dump(by_alias=True, mode="json", exclude_none=True)
        wire["ttl"] = None  # required, and null means unlimited
        return wire


def _refuse_settled(call: ToolCallView) -> None:
    if call.state in SETTLED:
        raise MCPError(
            code=types.INVALID_PARAMS,
            message=f"Task `{call.record_id}` is already {_status(call)}: it cannot be cancelled.",
        )


def _offset(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not cursor.isdigit():
        raise MCPError(code=types.INVALID_PARAMS, message="Invalid cursor.")
    return int(cursor)


def _status(call: ToolCallView) -> types.TaskStatus:
    if call.state is CallState.CANCELLED:
        return "cancelled"
    if call.state in _FAILED:
        return "failed"
    return "completed" if call.state in SETTLED else "working"


def _message(call: ToolCallView) -> str | None:
    if call.state is CallState.AWAITING_APPROVAL:
        return f"Waiting for a reviewer to approve tool call {call.record_id}."
    if call.state in _FAILED:
        return call.policy_reason or call.result
    return None


def _updated(call: ToolCallView) -> datetime:
    return call.finished_at or call.started_at or call.decided_at or call.created_at
