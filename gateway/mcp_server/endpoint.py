"""``/mcp``: the Streamable HTTP transport of the SDK's low-level server, behind the gateway key.

Stateless on purpose: every request carries its own key and is served by a fresh transport, so
any replica answers any request (a restart or a load balancer's switch loses nothing) and there
is no session table to share through the database or Redis. What outlives a request lives in
the database already: tool calls, their approvals, audit and usage. The price is what the
protocol ties to a session: server-to-client requests (sampling, elicitation) and a standalone
GET stream, which the gateway does not use; progress rides each call's own response stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from opentelemetry.trace import Tracer
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from gateway.auth import authenticate
from gateway.errors import McpUnavailable, handle_error
from gateway.mcp_server.handlers import CALLER, Caller, McpHandlers
from gateway.mcp_server.tasks import McpTasks
from gateway.services import Services
from gateway.tools_api import check_bundle
from llm_service.errors import GatewayError

# For clients that cannot add a query parameter to the server URL they are given.
BUNDLE_HEADER = "x-gateway-tool-bundle"
INSTRUCTIONS = (
    "The company's tools, as the gateway governs them: what your key's roles may use, with the "
    "admins' policies. Some calls wait for a human reviewer's approval."
)


class McpEndpoint:
    """The ASGI app at ``/mcp``; ``run`` it for the lifetime of the gateway's services."""

    def __init__(self, tracer: Tracer | None = None) -> None:
        self._tracer = tracer
        self._manager: StreamableHTTPSessionManager | None = None

    @asynccontextmanager
    async def run(self, services: Services) -> AsyncIterator[None]:
        handlers = McpHandlers(services, self._tracer)
        server: Server[object] = Server(
            "llm-gateway",
            version="0.1.0",
            instructions=INSTRUCTIONS,
            on_list_tools=handlers.list_tools,
            on_call_tool=handlers.call_tool,
        )
        server.middleware.append(handlers.hide_failures)
        server.middleware.append(handlers.cancellations)
        McpTasks(handlers, services.settings.mcp_server).install(server)
        manager = StreamableHTTPSessionManager(
            server,
            stateless=True,
            max_request_body_size=services.settings.max_request_bytes,
        )
        async with handlers.relay.listening(), manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            manager = self._manager
            if manager is None:
                raise McpUnavailable("The MCP endpoint is starting or stopping; try again.")
            services: Services = request.app.state.services
            principal = await authenticate(request, services)
            bundle = request.query_params.get("bundle") or request.headers.get(BUNDLE_HEADER)
            check_bundle(services, bundle)
        except GatewayError as exc:
            response = await handle_error(request, exc)
            await response(scope, receive, send)
            return
        caller = Caller(principal, bundle)
        scope.setdefault("state", {})[CALLER] = caller
        try:
            await manager.handle_request(scope, receive, send)
        finally:
            # The response has ended: a call still running has lost its client.
            caller.cancel_in_flight()
