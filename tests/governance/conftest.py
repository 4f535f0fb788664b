"""Tool governance over real in-process tools and a real (SQLite) database."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from db.engine import create_engine, session_factory
from governance import (
    PinningSettings,
    ToolGovernance,
    ToolPolicySettings,
    build_tool_governance,
)
from mcp_client import BundleConfig, CatalogSettings, LocalTool, MCPToolCatalog, ToolOverride
from mcp_client.supervisor import ServerPolicy
from migrations.commands import upgrade
from tool_servers import ToolServers, build_tool_servers

TRANSFER_SCHEMA = {
    "type": "object",
    "properties": {"amount": {"type": "integer", "minimum": 1}},
    "required": ["amount"],
    "additionalProperties": False,
}
EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
BUNDLES = [
    BundleConfig(name="clock", tools=["get_time"]),
    BundleConfig(name="interns", tools=["desk__get_time"], roles=["intern"]),
]


@dataclass
class Desk:
    """The in-process tool server ``desk``; ``ran`` records every execution."""

    ran: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def tool(self, name: str, schema: dict[str, Any], answer: str) -> LocalTool:
        async def handler(arguments: dict[str, Any]) -> str:
            self.ran.append((name, arguments))
            return answer

        return LocalTool(name, f"The {name} tool.", schema, handler)

    def tools(self) -> list[LocalTool]:
        return [
            self.tool("get_time", EMPTY_SCHEMA, "12:00 UTC"),
            self.tool("transfer_money", TRANSFER_SCHEMA, "transferred"),
            self.tool("admin_only", EMPTY_SCHEMA, "secret"),
        ]


DESK_POLICY = ServerPolicy(
    roles=frozenset({"user", "intern", "admin"}),
    tools={
        "transfer_money": ToolOverride(requires_approval=True),
        "admin_only": ToolOverride(roles=["admin"]),
    },
)


@dataclass
class Governed:
    tools: ToolGovernance
    servers: ToolServers
    desk: Desk
    sessions: async_sessionmaker[AsyncSession]


GovernedFactory = Callable[..., AbstractAsyncContextManager[Governed]]


@pytest.fixture
def governed(sqlite_url: str) -> GovernedFactory:
    """Builds and starts a governance over the ``desk`` tools; keywords: `tool_pinning`
    settings (pinning is off unless asked for, so each test sees only what it is about)."""

    @asynccontextmanager
    async def build(**pinning: Any) -> AsyncIterator[Governed]:
        await asyncio.to_thread(upgrade, sqlite_url)
        engine = create_engine(sqlite_url)
        sessions = session_factory(engine)
        settings = CatalogSettings(bundles=BUNDLES)
        desk = Desk()
        catalog = MCPToolCatalog(settings)
        catalog.register_local_tools("desk", desk.tools(), roles=[], policy=DESK_POLICY)
        servers = build_tool_servers(
            sessions, catalog_settings=settings, config_servers=[], environ={}, tools=catalog
        )
        tools = build_tool_governance(
            sessions,
            servers.catalog,
            trusted=servers.trusted,
            catalog_settings=settings,
            config_servers=[],
            pinning=PinningSettings(**{"enabled": False, "refresh_seconds": 3600, **pinning}),
            # The timer stays out of the way: the tests see what a change applies at once.
            policies=ToolPolicySettings(refresh_seconds=3600),
        )
        await servers.start()
        await tools.start()
        try:
            yield Governed(tools, servers, desk, sessions)
        finally:
            await tools.aclose()
            await servers.aclose()
            await engine.dispose()

    return build
