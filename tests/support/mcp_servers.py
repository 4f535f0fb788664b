"""Real tool servers for the MCP client's tests: the SDK's own server, a crashing stdio one and a
legacy REST manifest server."""

from __future__ import annotations

import base64
import os
import re
import socket
import subprocess
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.client._memory import InMemoryTransport
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from mcp_client.backend import BackendFactory, OnToolsChanged, ToolBackend
from mcp_client.http_watch import HTTPWatch
from mcp_client.session_backend import MCPSessionBackend

CRASHY_SERVER = Path(__file__).with_name("crashy_stdio_server.py")
HUGE_SIZE = 200_000


class AskedName(BaseModel):
    name: str


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


def features_server(name: str = "features") -> MCPServer:
    """An SDK server for what a client must do beyond calling: say who it is, follow progress,
    answer requests for input."""
    server = MCPServer(name)

    @server.tool(description="Says who the client said it was in `initialize`.")
    def whoami(ctx: Context) -> str:
        params = ctx.session.client_params
        info = params.client_info if params else None
        return f"{info.name} {info.version}" if info else "unknown"

    @server.tool(description="Reports progress three times, then answers.")
    async def steps(ctx: Context) -> str:
        for step in range(1, 4):
            await ctx.report_progress(step, 3, f"step {step} of 3")
        return "done"

    @server.tool(description="Asks the caller for a name, then greets it.")
    async def ask_name(ctx: Context) -> str:
        answer = await ctx.elicit("What is your name?", schema=AskedName)
        if answer.action != "accept":
            return f"no name ({answer.action})"
        return f"hello {answer.data.name}"

    @server.tool(description="The capabilities the client advertised in `initialize`.")
    def client_capabilities(ctx: Context) -> dict[str, Any]:
        capabilities = ctx.session.client_capabilities
        return capabilities.model_dump(by_alias=True, exclude_none=True) if capabilities else {}

    @server.tool(description="Asks the client's model to write something (sampling).")
    async def sample(ctx: Context) -> str:
        message = types.SamplingMessage(
            role="user", content=types.TextContent(type="text", text="write a haiku")
        )
        try:
            with warnings.catch_warnings():  # deprecated in 2026-07-28; this server speaks 2025
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await ctx.session.create_message(
                    [message], max_tokens=50, related_request_id=ctx.request_id
                )
        except MCPError as exc:
            return f"sampling refused: {exc.error.message}"
        return "sampled"

    return server


def in_process(server: MCPServer | Server[Any]) -> BackendFactory:
    """A backend talking to ``server`` in this event loop over the SDK's memory transport."""

    def build(on_tools_changed: OnToolsChanged) -> ToolBackend:
        def opener(_watch: HTTPWatch) -> AbstractAsyncContextManager[Any]:
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


class RequireToken:
    """An ASGI wrapper answering 401 unless `Authorization: Bearer <token>`: rotate ``token`` to
    make the server reject what it accepted a moment ago."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            if headers.get(b"authorization") != f"Bearer {self.token}".encode():
                response = JSONResponse({"error": "invalid_token"}, status_code=401)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


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


# --- an SDK server in a process of its own, to restart or kill under a live catalog ---------------

COUNTING_SERVER = Path(__file__).with_name("counting_mcp_server.py")
_STARTUP_SECONDS = 30.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class ServerProcess:
    """A server command run on a fixed 127.0.0.1 port; ``restart`` brings it back on the same one.

    ``ready_line`` is a regular expression its output prints once it listens.
    """

    def __init__(self, command: list[str], ready_line: str, env: dict[str, str] | None = None):
        self.command = command
        self.ready_line = re.compile(ready_line)
        self.env = {**os.environ, **(env or {})}
        self.process: subprocess.Popen[str] | None = None
        self.output: list[str] = []

    def start(self) -> None:
        process = subprocess.Popen(
            self.command,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.process = process
        ready = threading.Event()

        def read() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                self.output.append(line)
                if self.ready_line.search(line):
                    ready.set()
            ready.set()  # it exited: stop waiting, the check below fails

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(_STARTUP_SECONDS) or process.poll() is not None:
            self.stop()
            raise RuntimeError("the server did not start:\n" + "".join(self.output[-20:]))

    def stop(self) -> None:
        """SIGKILL: the server forgets every session, as when its host dies."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
        if self.process is not None:
            self.process.wait(_STARTUP_SECONDS)
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


@contextmanager
def counting_server(executions: Path) -> Iterator[tuple[str, ServerProcess]]:
    """The SDK's MCPServer over streamable HTTP in a subprocess; yields its /mcp URL."""
    port = free_port()
    server = ServerProcess(
        [sys.executable, str(COUNTING_SERVER), str(port), str(executions)],
        ready_line=r"Uvicorn running on",
    )
    server.start()
    try:
        yield f"http://127.0.0.1:{port}/mcp", server
    finally:
        server.stop()
