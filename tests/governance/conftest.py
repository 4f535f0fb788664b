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


@asynccontextmanager
async def governing(
    database_url: str, catalog: MCPToolCatalog, pinning: PinningSettings | None = None
) -> AsyncIterator[tuple[ToolGovernance, ToolServers, async_sessionmaker[AsyncSession]]]:
    """The tool servers over ``catalog`` and the governance over them, started on a migrated
    database (pinning off unless given; policies not refreshed on a timer, so a test sees what a
    change applies at once)."""
    await asyncio.to_thread(upgrade, database_url)
    engine = create_engine(database_url)
    sessions = session_factory(engine)
    settings = catalog.settings
    servers = build_tool_servers(
        sessions, catalog_settings=settings, config_servers=[], environ={}, tools=catalog
    )
    tools = build_tool_governance(
        sessions,
        servers.catalog,
        trusted=servers.trusted,
        catalog_settings=settings,
        config_servers=[],
        pinning=pinning or PinningSettings(enabled=False, refresh_seconds=3600),
        policies=ToolPolicySettings(refresh_seconds=3600),
    )
    await servers.start()
    await tools.start()
    try:
        yield tools, servers, sessions
    finally:
        await tools.aclose()
        await servers.aclose()
        await engine.dispose()


@pytest.fixture
def governed(sqlite_url: str) -> GovernedFactory:
    """Builds and starts a governance over the ``desk`` tools; keywords: `tool_pinning`
    settings (pinning is off unless asked for, so each test sees only what it is about)."""

    @asynccontextmanager
    async def build(**pinning: Any) -> AsyncIterator[Governed]:
        desk = Desk()
        catalog = MCPToolCatalog(CatalogSettings(bundles=BUNDLES))
        catalog.register_local_tools("desk", desk.tools(), roles=[], policy=DESK_POLICY)
        settings = PinningSettings(**{"enabled": False, "refresh_seconds": 3600, **pinning})
        async with governing(sqlite_url, catalog, settings) as (tools, servers, sessions):
            yield Governed(tools, servers, desk, sessions)

    return build
