"""Real tool servers for the MCP client's tests: the SDK's own server, a crashing stdio one and a
legacy REST manifest server."""

from __future__ import annotations

import base64
import sys
import threading
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.client._memory import InMemoryTransport
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from mcp_client.backend import BackendFactory, OnToolsChanged, ToolBackend
from mcp_client.session_backend import MCPSessionBackend

CRASHY_SERVER = Path(__file__).with_name("crashy_stdio_server.py")
HUGE_SIZE = 200_000


@dataclass
class DemoServer:
    """An SDK server with tools covering every case, and thread-safe flags tests wait on."""

    server: MCPServer
    hang_started: threading.Event = field(default_factory=threading.Event)
    hang_cancelled: threading.Event = field(default_factory=threading.Event)


def demo_server(name: str = "demo") -> DemoServer:
    server = MCPServer(name)
    demo = DemoServer(server)

    @server.tool(description="Echo the text back.")
    def echo(text: str) -> str:
        return f"{name}:{text}"

    @server.tool(description="Never answers until cancelled.")
    async def hang() -> str:
        demo.hang_started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            demo.hang_cancelled.set()
            raise
        return "unreachable"

    @server.tool(description="Returns a very large text.")
    def huge() -> str:
        return "x" * HUGE_SIZE

    @server.tool(description="Always fails.")
    def fail() -> str:
        raise ToolError("the backend is on fire")

    @server.tool(description="Returns text, an image and an embedded resource.")
    def mixed() -> list[types.ContentBlock]:
        return [
            types.TextContent(type="text", text="a chart follows"),
            types.ImageContent(
                type="image", data=base64.b64encode(b"\x89PNG1234").decode(), mime_type="image/png"
            ),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(uri="file:///notes.txt", text="the notes"),
            ),
        ]

    @server.tool(description="Adds the tool `late` and tells clients the list changed.")
    async def grow(ctx: Context) -> str:
        server.add_tool(lambda: "late answer", name="late", description="Added later.")
        await ctx.session.send_tool_list_changed()
        return "grown"

    return demo


def in_process(server: MCPServer) -> BackendFactory:
    """A backend talking to ``server`` in this event loop over the SDK's memory transport."""

    def build(on_tools_changed: OnToolsChanged) -> ToolBackend:
        def opener() -> AbstractAsyncContextManager[Any]:
            return InMemoryTransport(server)

        return MCPSessionBackend(opener, on_tools_changed)

    return build


def crashy_stdio_command() -> tuple[str, list[str]]:
    return sys.executable, [str(CRASHY_SERVER)]


# --- a legacy REST tool server (seed 004) ---------------------------------------------------------

MANIFEST: dict[str, Any] = {
    "tools": [
        {
            "name": "get_weather",
            "description": "Weather for a city.",
            "inputSchema": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
            "endpoint": "/weather",
            "method": "POST",
        },
        {
            "name": "city_time",
            "description": "Local time in a city (no endpoint: convention routing).",
            "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
        {
            "name": "status",
            "description": "Service status, by GET.",
            "inputSchema": {"type": "object", "properties": {"verbose": {"type": "string"}}},
            "endpoint": "/status",
            "method": "GET",
        },
        {
            "name": "broken",
            "description": "Answers 500.",
            "inputSchema": {"type": "object", "properties": {}},
        },
    ]
}


def manifest_app(seen_headers: list[dict[str, str]]) -> Starlette:
    async def tools(request: Request) -> JSONResponse:
        seen_headers.append(dict(request.headers))
        return JSONResponse(MANIFEST)

    async def weather(request: Request) -> JSONResponse:
        body = await request.json()
        return JSONResponse({"city": body["city"], "forecast": "sunny"})

    async def city_time(request: Request) -> JSONResponse:
        body = await request.json()
        return JSONResponse({"city": body.get("city"), "time": "12:00"})

    async def status(request: Request) -> PlainTextResponse:
        return PlainTextResponse(f"ok verbose={request.query_params.get('verbose')}")

    async def broken(request: Request) -> JSONResponse:
        return JSONResponse({"error": "internal"}, status_code=500)

    return Starlette(
        routes=[
            Route("/tools", tools),
            Route("/weather", weather, methods=["POST"]),
            Route("/city-time", city_time, methods=["POST"]),
            Route("/status", status),
            Route("/broken", broken, methods=["POST"]),
        ]
    )


class Gate:
    """An ASGI wrapper answering 503 until opened: a server that is down, then comes up."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.open = False

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not self.open:
            await PlainTextResponse("down", status_code=503)(scope, receive, send)
            return
        await self.app(scope, receive, send)
