"""``tools/list`` and ``tools/call`` for the caller the endpoint authenticated."""

from __future__ import annotations

from dataclasses import dataclass
from time import perf_counter
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from opentelemetry.trace import Tracer

from chat_service.tool_calls import CallState, ToolCallView
from gateway.keys import Principal
from gateway.limits.limiter import RateLimited
from gateway.mcp_server.calls import GovernedCalls
from gateway.mcp_server.listing import mcp_tools
from gateway.mcp_server.waiting import wait_for_decision
from gateway.services import Services
from gateway.usage import UsageEntry

# Where a call's result names the gateway's record of it (the id approvals and audit use).
RESULT_META_KEY = "llm-gateway/tool_call"
CALLER = "mcp_caller"


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling, as the endpoint authenticated them, and the bundle they asked for."""

    principal: Principal
    bundle: str | None


def caller_of(ctx: ServerRequestContext[Any, Any]) -> Caller:
    request = ctx.request
    caller = None if request is None else request.scope.get("state", {}).get(CALLER)
    if not isinstance(caller, Caller):  # the endpoint authenticates every request first
        raise RuntimeError("an MCP request reached its handler unauthenticated")
    return caller


class McpHandlers:
    def __init__(self, services: Services, tracer: Tracer | None = None) -> None:
        self._services = services
        self._calls = GovernedCalls(
            tools=services.tools,
            calls=services.tool_calls,
            conversations=services.conversations,
            settings=services.settings.tool_loop,
            tracer=tracer,
        )

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        caller = caller_of(ctx)
        tools = mcp_tools(self._services.tools, caller.principal.roles, caller.bundle)
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        caller = caller_of(ctx)
        try:
            await self._services.limits.admit(caller.principal)
        except RateLimited as exc:
            return _error(f"{exc.message} Retry after {exc.retry_after:g}s.")
        started = perf_counter()
        call = await self._calls.propose(
            caller.principal, caller.bundle, params.name, params.arguments or {}
        )
        if call.state is CallState.AWAITING_APPROVAL:
            decided = await self._wait(ctx, call)
            if decided is None:
                self._record_usage(caller.principal, call, started)
                return _still_pending(call)
            call = decided
        if call.state is CallState.APPROVED:
            call = await self._calls.run_approved(call)
        self._record_usage(caller.principal, call, started)
        return _result(call)

    async def _wait(
        self, ctx: ServerRequestContext[Any, Any], call: ToolCallView
    ) -> ToolCallView | None:
        settings = self._services.settings.mcp_server
        message = f"Waiting for a reviewer to approve tool call {call.record_id}."

        async def still_waiting(checks: int) -> None:
            # Keeps the client's request alive and shows the human step in its progress UI.
            await ctx.session.report_progress(checks, None, message)

        return await wait_for_decision(
            self._calls.get,
            call,
            wait_seconds=settings.approval_wait_seconds,
            poll_seconds=settings.approval_poll_seconds,
            still_waiting=still_waiting,
        )

    def _record_usage(self, principal: Principal, call: ToolCallView, started: float) -> None:
        failed = call.state is not CallState.SUCCEEDED
        self._services.usage.record(
            UsageEntry(
                request_id=call.record_id,
                api_key_id=principal.key_id,
                key_name=principal.name,
                team=principal.team,
                route="/mcp",
                model=f"tool:{call.tool_name}",
                provider="mcp",
                prompt_tokens=0,
                completion_tokens=0,
                latency_ms=round((perf_counter() - started) * 1000),
                status_code=200,
                error_type=call.state.value if failed else None,
            )
        )


def _meta(call: ToolCallView) -> dict[str, Any]:
    return {RESULT_META_KEY: {"record_id": call.record_id, "state": call.state.value}}


def _error(text: str, meta: dict[str, Any] | None = None) -> types.CallToolResult:
    content = [types.TextContent(type="text", text=text)]
    return types.CallToolResult(content=content, is_error=True, _meta=meta)


def _still_pending(call: ToolCallView) -> types.CallToolResult:
    text = (
        f"Tool call {call.record_id} (`{call.tool_name}`) is waiting for approval in the "
        "gateway's approval queue; it was not run. It runs once a reviewer approves it "
        "(GET /v1/admin/approvals)."
    )
    return _error(text, _meta(call))


def _result(call: ToolCallView) -> types.CallToolResult:
    text = call.result or ""
    if call.state is CallState.SUCCEEDED:
        content = [types.TextContent(type="text", text=text)]
        return types.CallToolResult(
            content=content, is_error=call.result_is_error, _meta=_meta(call)
        )
    if call.state is CallState.DENIED_BY_POLICY:
        text = f"Denied by policy: {call.policy_reason or text}"
    return _error(text, _meta(call))
