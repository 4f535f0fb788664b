"""``tools/list`` and ``tools/call`` for the caller the endpoint authenticated."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

import mcp_types as types
import structlog
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from opentelemetry.trace import Tracer
from pydantic import ValidationError

from accounts.errors import RateLimited
from accounts.principals import Principal
from accounts.usage import UsageEntry
from chat_service.events import ToolCallProgress
from chat_service.tool_call_view import SETTLED, CallState, ToolCallView
from gateway.mcp_server.calls import CANCELLED, GovernedCalls, OnProgress
from gateway.mcp_server.cancellation import CancelRelay, InFlight, NoRelay, cancel_once
from gateway.mcp_server.listing import mcp_tools
from gateway.mcp_server.waiting import wait_for_decision
from gateway.services import Services
from gateway.settings import Settings

# Where a call's result names the gateway's record of it (the id approvals and audit use).
RESULT_META_KEY = "llm-gateway/tool_call"
CALLER = "mcp_caller"
# The longest tool name a call can be stored under (``tool_calls.tool_name`` is String(200)):
# no tool in the catalog has a longer one, and PostgreSQL refuses it with its own message.
MAX_TOOL_NAME = 200
FAILED = "The gateway could not handle this request; the failure is in its log."
log = structlog.get_logger("gateway.mcp_server")


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling, as the endpoint authenticated them, and the bundle they asked for.

    ``in_flight``: the calls this HTTP request is serving. The stateless transport does not
    cancel a handler when its client goes away, so the endpoint cancels what is left here once
    the response has ended (and with it the gateway's request to the tool server)."""

    principal: Principal
    bundle: str | None
    in_flight: set[asyncio.Task[types.CallToolResult]] = field(default_factory=set)

    def cancel_in_flight(self) -> None:
        for work in list(self.in_flight):
            cancel_once(work)


def caller_of(ctx: ServerRequestContext[Any, Any]) -> Caller:
    request = ctx.request
    caller = None if request is None else request.scope.get("state", {}).get(CALLER)
    if not isinstance(caller, Caller):  # the endpoint authenticates every request first
        raise RuntimeError("an MCP request reached its handler unauthenticated")
    return caller


class McpHandlers:
    def __init__(self, services: Services, tracer: Tracer | None = None) -> None:
        self._services = services
        self.calls = GovernedCalls(
            tools=services.tools,
            calls=services.tool_calls,
            conversations=services.conversations,
            settings=services.settings.tool_loop,
            sessions=services.sessions,
            tracer=tracer,
            on_screened=services.on_screened,
        )
        self._running: set[asyncio.Task[types.CallToolResult]] = set()  # kept till done
        self._in_flight = InFlight()
        self.relay = _relay(services.settings, self._in_flight)
        self._relaying: set[asyncio.Future[None]] = set()  # publishes under way, kept till done

    async def cancellations(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """A middleware: a client's ``notifications/cancelled`` stops its call here."""
        if ctx.method == "notifications/cancelled" and isinstance(ctx.params, Mapping):
            request_id = ctx.params.get("requestId")
            key_id = caller_of(ctx).principal.key_id
            if request_id is not None and self._in_flight.cancel(key_id, request_id) == 0:
                # Another replica may run it. Detached: a stateless transport ends (and cancels)
                # a notification's handling as soon as it has answered 202.
                relayed = asyncio.ensure_future(self.relay.publish(key_id, request_id))
                self._relaying.add(relayed)
                relayed.add_done_callback(self._relaying.discard)
        return await call_next(ctx)

    async def hide_failures(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """A middleware: a failure of the gateway's own (a database's refusal, a bug) is logged
        and answered as a plain JSON-RPC internal error. The SDK would send its text to the
        client (as error code 0 for clients of the 2025 protocol versions)."""
        try:
            return await call_next(ctx)
        except (MCPError, ValidationError):
            raise  # the caller's own mistake, in words meant for the caller
        except Exception:
            log.exception("mcp_request_failed", method=ctx.method)
            raise MCPError(code=types.INTERNAL_ERROR, message=FAILED) from None

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
        # Its own task, shielded from the handler's anyio cancellation and cancelled the plain
        # asyncio way instead: a cancellation arriving through an anyio cancel scope stops the
        # tool server's MCP client before it can tell the server to stop.
        work = asyncio.ensure_future(self._call_tool(ctx, caller, params))
        self._running.add(work)
        work.add_done_callback(self._running.discard)
        caller.in_flight.add(work)
        try:
            with self._in_flight.running(caller.principal.key_id, ctx.request_id, work):
                return await asyncio.shield(work)
        except asyncio.CancelledError:
            if not work.cancelled():
                raise
            return _error(CANCELLED)  # nobody reads it: the client has gone
        finally:
            caller.in_flight.discard(work)
            cancel_once(work)  # a no-op once it is done; otherwise the handler was cancelled

    async def start(
        self,
        caller: Caller,
        params: types.CallToolRequestParams,
        on_progress: OnProgress | None = None,
    ) -> ToolCallView | types.CallToolResult:
        """Admits the call under the key's limits and proposes it, or resumes the same call the
        key made before and still awaits (see ``GovernedCalls.held``): the call as it stands,
        or the result refusing it."""
        if len(params.name) > MAX_TOOL_NAME:
            message = f"Unknown tool: no tool name is longer than {MAX_TOOL_NAME} characters."
            raise MCPError(code=types.INVALID_PARAMS, message=message)
        try:
            await self._services.limits.admit(caller.principal)
        except RateLimited as exc:
            return _error(f"{exc.message} Retry after {exc.retry_after:g}s.")
        arguments = params.arguments or {}
        call = await self.calls.held(caller.principal, params.name, arguments)
        if call is None:
            call = await self.calls.propose(
                caller.principal, caller.bundle, params.name, arguments, on_progress
            )
        return call

    async def _call_tool(
        self,
        ctx: ServerRequestContext[Any, Any],
        caller: Caller,
        params: types.CallToolRequestParams,
    ) -> types.CallToolResult:
        started = perf_counter()

        async def forward(event: ToolCallProgress) -> None:
            # The tool server's progress, under the client's own progress token (a no-op when
            # it sent none); a task's status changes carry no progress value and stay here.
            if event.progress is not None:
                await ctx.session.report_progress(event.progress, event.total, event.message)

        call = await self.start(caller, params, forward)
        if isinstance(call, types.CallToolResult):
            return call
        if call.state is CallState.AWAITING_APPROVAL:
            decided = await self._wait(ctx, call)
            if decided is None:
                self.record_usage(caller.principal, call, started)
                return _still_pending(call)
            call = decided
        if call.state is CallState.APPROVED:
            call = await self.calls.run_approved(call, forward)
        self.record_usage(caller.principal, call, started)
        return result_of(call)

    async def _wait(
        self, ctx: ServerRequestContext[Any, Any], call: ToolCallView
    ) -> ToolCallView | None:
        settings = self._services.settings.mcp_server
        message = f"Waiting for a reviewer to approve tool call {call.record_id}."

        async def still_waiting(checks: int) -> None:
            # Keeps the client's request alive and shows the human step in its progress UI.
            await ctx.session.report_progress(checks, None, message)

        return await wait_for_decision(
            self.calls.get,
            call,
            wait_seconds=settings.approval_wait_seconds,
            poll_seconds=settings.approval_poll_seconds,
            still_waiting=still_waiting,
        )

    def record_usage(self, principal: Principal, call: ToolCallView, started: float) -> None:
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


def _relay(settings: Settings, in_flight: InFlight) -> CancelRelay:
    if not settings.redis_url:
        return NoRelay()
    # Imported only when configured: the Redis client is tens of MB of resident memory.
    from gateway.mcp_server.redis_relay import RedisCancelRelay

    return RedisCancelRelay(settings.redis_url, settings.redis_key_prefix, in_flight)


def _meta(call: ToolCallView) -> dict[str, Any]:
    return {RESULT_META_KEY: {"record_id": call.record_id, "state": call.state.value}}


def _error(text: str, meta: dict[str, Any] | None = None) -> types.CallToolResult:
    content = [types.TextContent(type="text", text=text)]
    return types.CallToolResult(content=content, is_error=True, _meta=meta)


def _still_pending(call: ToolCallView) -> types.CallToolResult:
    text = (
        f"Tool call {call.record_id} (`{call.tool_name}`) is waiting for approval in the "
        "gateway's approval queue (GET /v1/admin/approvals); it has not run. Call the tool "
        "again with the same arguments to keep waiting: the gateway resumes this call, and runs "
        "it once a reviewer has approved it."
    )
    return _error(text, _meta(call))


def result_of(call: ToolCallView) -> types.CallToolResult:
    text = call.result or ""
    if call.state is CallState.SUCCEEDED:
        content = [types.TextContent(type="text", text=text)]
        return types.CallToolResult(
            content=content, is_error=call.result_is_error, _meta=_meta(call)
        )
    if call.state is CallState.DENIED_BY_POLICY:
        text = f"Denied by policy: {call.policy_reason or text}"
    elif call.state not in SETTLED:
        text = f"Tool call {call.record_id} is {call.state.value} for another request."
    return _error(text, _meta(call))
