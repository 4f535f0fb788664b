"""A live gateway in front of a real MCP tool server, and the mcp SDK's client to reach it."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import Context, MCPServer

from gateway.mcp_server.handlers import RESULT_META_KEY
from tests.support.gateway import RunningGateway, running_gateway
from tests.support.servers import serve


@dataclass
class Desk:
    """The tool server behind the gateway, with what its tools did (they run in its thread)."""

    server: MCPServer
    transfers: list[int] = field(default_factory=list)
    hang_started: threading.Event = field(default_factory=threading.Event)
    hang_cancelled: threading.Event = field(default_factory=threading.Event)


def desk_server() -> Desk:
    server = MCPServer("desk")
    desk = Desk(server)

    @server.tool(
        description="Look a word up.", annotations=types.ToolAnnotations(read_only_hint=True)
    )
    def lookup(word: str) -> str:
        return f"{word}: a thing"

    @server.tool(description="Salaries (analysts only).")
    def payroll() -> str:
        return "secret numbers"

    @server.tool(description="Move money (a reviewer approves each transfer).")
    def transfer(amount: int) -> str:
        desk.transfers.append(amount)
        return f"transferred {amount}"

    @server.tool(description="Never answers until cancelled.")
    async def hang() -> str:
        desk.hang_started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            desk.hang_cancelled.set()
            raise
        return "unreachable"

    @server.tool(description="Counts to three, reporting each step.")
    async def count(ctx: Context) -> str:
        for step in range(1, 4):
            await ctx.report_progress(step, 3, f"step {step} of 3")
        return "counted"

    @server.tool(description="Erase everything (an administrator switches it off).")
    def wipe() -> str:
        return "wiped"

    return desk


def gateway_settings(desk_url: str, **mcp_server: Any) -> dict[str, Any]:
    return {
        "mcp_servers": [
            {
                "name": "desk",
                "transport": "streamable_http",
                "url": f"{desk_url}/mcp",
                "roles": ["user", "analyst"],
                "tools": {
                    "payroll": {"roles": ["analyst"]},
                    "transfer": {"requires_approval": True},
                },
            }
        ],
        "tool_pinning": {"trusted_servers": ["desk"]},
        "tool_catalog": {"bundles": [{"name": "reading", "tools": ["lookup"]}]},
        "tool_loop": {"approval_expiry_seconds": 60, "sweep_interval_seconds": 0.2},
        "mcp_server": {"approval_wait_seconds": 30, "approval_poll_seconds": 0.05, **mcp_server},
    }


@dataclass
class McpStack:
    gateway: RunningGateway
    desk: Desk
    desk_url: str
    user_key: str
    analyst_key: str
    admin_key: str

    @property
    def mcp_url(self) -> str:
        return f"{self.gateway.url}/mcp"

    def admin(self) -> httpx2.AsyncClient:
        headers = {"authorization": f"Bearer {self.admin_key}"}
        return httpx2.AsyncClient(base_url=self.gateway.url, headers=headers, timeout=30)


@asynccontextmanager
async def mcp_session(url: str, key: str | None) -> AsyncIterator[ClientSession]:
    """The SDK's own client, as an IDE or agent framework would connect."""
    headers = {"authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=120.0)) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@pytest.fixture
def desk() -> Iterator[tuple[Desk, str]]:
    desk = desk_server()
    with serve(desk.server.streamable_http_app()) as url:
        yield desk, url


@contextmanager
def stack_on(database_url: str, desk: tuple[Desk, str], **settings: Any) -> Iterator[McpStack]:
    """A gateway before ``desk`` with a user, an analyst and a reviewer key; ``settings`` are
    more top-level gateway settings."""
    server, url = desk
    with running_gateway(database_url, **{**gateway_settings(url), **settings}) as gateway:
        yield McpStack(
            gateway,
            server,
            url,
            user_key=gateway.create_key("product-team", ["user"]),
            analyst_key=gateway.create_key("analysts", ["analyst"]),
            admin_key=gateway.create_key("reviewer", ["admin"]),
        )


@pytest.fixture
def mcp_stack(database_url: str, desk: tuple[Desk, str]) -> Iterator[McpStack]:
    with stack_on(database_url, desk) as stack:
        yield stack


def record_of(result: types.CallToolResult) -> dict[str, Any]:
    assert result.meta is not None
    record: dict[str, Any] = result.meta[RESULT_META_KEY]
    return record


def text_of(result: types.CallToolResult) -> str:
    [block] = result.content
    assert isinstance(block, types.TextContent)
    return block.text


def call(stack: McpStack, key: str, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    async def run() -> types.CallToolResult:
        async with mcp_session(stack.mcp_url, key) as session:
            return await session.call_tool(name, arguments)

    return anyio.run(run)
