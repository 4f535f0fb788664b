"""Keeps this replica's tool servers in step with those admins stored at run time."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import structlog
from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from chat_service.refreshing_catalog import RefreshingCatalog
from db.models import RuntimeMCPServer
from gateway.server_rules import RuntimeServerRules
from llm_service.errors import InvalidRequest
from mcp_client.catalog import MCPToolCatalog, policy_of
from mcp_client.config import MCPServerConfig
from mcp_client.transports import backend_factory
from mcp_client.types import StandardizedTool, ToolResult

log = structlog.get_logger("gateway.runtime_catalog")


async def stored_servers(sessions: async_sessionmaker[AsyncSession]) -> dict[str, dict[str, Any]]:
    """Every row of ``runtime_mcp_servers``: name -> the server's settings as stored."""
    async with sessions() as session:
        rows = await session.scalars(select(RuntimeMCPServer).order_by(RuntimeMCPServer.name))
        return {row.name: row.config for row in rows}


class RuntimeServerCatalog(RefreshingCatalog):
    """Wraps the MCP catalog. Each ``refresh`` re-reads the stored servers and reconciles: starts
    new ones, restarts changed ones, stops removed ones, and leaves every other server alone.

    It runs at start, every ``tool_catalog.runtime_servers_refresh_seconds``, and at once on the
    replica that saved a change. A stored server the config file also names, or that the current
    allow-lists refuse (they may have shrunk since it was stored), is skipped with a warning.
    """

    def __init__(
        self,
        inner: MCPToolCatalog,
        sessions: async_sessionmaker[AsyncSession],
        rules: RuntimeServerRules,
        config_names: Iterable[str],
    ) -> None:
        super().__init__(inner, inner.settings.runtime_servers_refresh_seconds, "runtime-servers")
        self._mcp = inner
        self._sessions = sessions
        self._rules = rules
        self._config_names = frozenset(config_names)
        self._applied: dict[str, MCPServerConfig] = {}
        self._skipped: dict[str, str] = {}
        self._lock = asyncio.Lock()  # the timer and an admin's change may refresh at once

    async def start(self) -> None:
        # Stored servers join the config file's before the first discovery, so all start together.
        async with self._lock:
            await self._reconcile()
        await super().start()

    async def refresh(self) -> None:
        async with self._lock:
            await self._reconcile()
            await self._mcp.start()  # discovers the servers just added; a no-op otherwise

    def trusted(self) -> frozenset[str]:
        """Runtime servers marked ``trusted`` (tool pinning skips their review)."""
        return frozenset(name for name, config in self._applied.items() if config.trusted)

    async def _reconcile(self) -> None:
        wanted = self._usable(await stored_servers(self._sessions))
        for name in [name for name, config in self._applied.items() if wanted.get(name) != config]:
            del self._applied[name]
            await self._mcp.remove_server(name)
            log.info("runtime_server_stopped", server=name)
        for name, config in wanted.items():
            if name in self._applied:
                continue
            # Runtime servers may not read the environment (the rules refuse headers_env).
            factory = backend_factory(config, {})
            self._mcp.add_server(name, config.transport, policy_of(config), factory)
            self._applied[name] = config
            log.info("runtime_server_added", server=name, transport=config.transport)

    def _usable(self, rows: dict[str, dict[str, Any]]) -> dict[str, MCPServerConfig]:
        usable: dict[str, MCPServerConfig] = {}
        skipped: dict[str, str] = {}
        for name, raw in rows.items():
            try:
                config = MCPServerConfig.model_validate(raw)
                if name in self._config_names:
                    raise InvalidRequest("the config file defines a server of this name")
                self._rules.check(config)
            except (ValidationError, InvalidRequest) as exc:
                skipped[name] = str(exc)
                continue
            usable[name] = config
        for name, reason in skipped.items():
            if self._skipped.get(name) != reason:  # once per reason, not on every refresh
                log.warning("runtime_server_skipped", server=name, reason=reason)
        self._skipped = skipped
        return usable

    def get_tools_for_llm(
        self, roles: Iterable[str], bundle: str | None = None
    ) -> list[StandardizedTool]:
        return self._mcp.get_tools_for_llm(roles, bundle)

    def get(self, name: str) -> StandardizedTool | None:
        return self._mcp.get(name)

    def all_tools(self) -> list[StandardizedTool]:
        return self._mcp.all_tools()

    async def call_tool(
        self, name: str, arguments: dict[str, Any], timeout: float | None = None
    ) -> ToolResult:
        return await self._mcp.call_tool(name, arguments, timeout)
