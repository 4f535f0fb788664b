"""Keeps this replica's tool servers in step with those admins stored at run time."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Set
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog
from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from db.models import RuntimeMCPServer
from llm_service.errors import InvalidRequest
from mcp_client.catalog import MCPToolCatalog, policy_of
from mcp_client.config import MCPServerConfig
from mcp_client.index import Precedence
from mcp_client.transports import backend_factory
from tool_servers.grants import ServerGrants, uses_consent
from tool_servers.rules import RuntimeServerRules

log = structlog.get_logger("tool_servers.sync")


@dataclass(frozen=True, slots=True)
class StoredServer:
    config: dict[str, Any]  # the server's settings as stored
    created_at: datetime

    def precedence(self, name: str) -> Precedence:
        """After every config file's server, then oldest first: the same on every replica and
        across restarts and edits."""
        return (1, self.created_at.timestamp(), name)


async def stored_servers(sessions: async_sessionmaker[AsyncSession]) -> dict[str, StoredServer]:
    """Every row of ``runtime_mcp_servers``, by name."""
    async with sessions() as session:
        rows = await session.scalars(select(RuntimeMCPServer).order_by(RuntimeMCPServer.name))
        return {row.name: StoredServer(row.config, row.created_at) for row in rows}


class RuntimeServerSync:
    """Keeps the MCP catalog's servers in step with those stored. Each ``refresh`` re-reads the
    stored servers and reconciles: starts new ones, restarts changed ones, stops removed ones, and
    leaves every other server alone.

    It runs at start, every ``tool_catalog.runtime_servers_refresh_seconds``, and at once on the
    replica that saved a change. A stored server the config file also names, or that the current
    allow-lists refuse (they may have shrunk since it was stored), is skipped with a warning.
    """

    def __init__(
        self,
        catalog: MCPToolCatalog,
        sessions: async_sessionmaker[AsyncSession],
        rules: RuntimeServerRules,
        config_names: Iterable[str],
        grants: ServerGrants,
    ) -> None:
        self._mcp = catalog
        self._grants = grants
        self._sessions = sessions
        self._rules = rules
        self._config_names = frozenset(config_names)
        self._applied: dict[str, MCPServerConfig] = {}
        self._skipped: dict[str, str] = {}
        self._lock = asyncio.Lock()  # the timer and an admin's change may refresh at once

    @property
    def refresh_seconds(self) -> float:
        return self._mcp.settings.runtime_servers_refresh_seconds

    async def add_stored(self) -> None:
        """Adds the stored servers without starting them: at start, so they join the config
        file's before the first discovery and all start together."""
        async with self._lock:
            await self._reconcile()

    async def refresh(self) -> None:
        async with self._lock:
            await self._reconcile()
            await self._mcp.start()  # discovers the servers just added; a no-op otherwise

    def trusted(self) -> Set[str]:
        """Runtime servers marked ``trusted`` (tool pinning skips their review)."""
        return frozenset(name for name, config in self._applied.items() if config.trusted)

    async def _reconcile(self) -> None:
        rows = await stored_servers(self._sessions)
        wanted = self._usable(rows)
        for name in [name for name, config in self._applied.items() if wanted.get(name) != config]:
            del self._applied[name]
            await self._mcp.remove_server(name)
            log.info("runtime_server_stopped", server=name)
        for name, config in wanted.items():
            if name in self._applied:
                continue
            # Runtime servers may not read the environment (the rules refuse headers_env).
            tokens = self._grants.store(config) if uses_consent(config) else None
            factory = backend_factory(config, {}, tokens=tokens)
            precedence = rows[name].precedence(name)
            self._mcp.add_server(name, config.transport, policy_of(config), factory, precedence)
            self._applied[name] = config
            log.info("runtime_server_added", server=name, transport=config.transport)

    def _usable(self, rows: dict[str, StoredServer]) -> dict[str, MCPServerConfig]:
        usable: dict[str, MCPServerConfig] = {}
        skipped: dict[str, str] = {}
        for name, row in rows.items():
            try:
                config = MCPServerConfig.model_validate(row.config)
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
