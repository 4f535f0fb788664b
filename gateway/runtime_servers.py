"""MCP servers admins add, change and remove at run time, stored in the database.

They are merged with the config file's servers at start (a config server of the same name wins)
and applied to this replica's running catalog at once. A stdio server may only run a command line
that is on ``tool_catalog.stdio_allow_list`` exactly, with no extra environment or working
directory, and no server may read the gateway's environment (``headers_env``): so no API key can
make the gateway run an arbitrary program or leak its secrets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import structlog
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from db.models import AuditEvent, RuntimeMCPServer
from llm_service.errors import GatewayError, InvalidRequest
from mcp_client.catalog import MCPToolCatalog, policy_of
from mcp_client.config import MCPServerConfig
from mcp_client.transports import backend_factory

log = structlog.get_logger("gateway.runtime_servers")


class ServerConflict(GatewayError):
    status_code = 409
    error_type = "invalid_request_error"
    code = "server_conflict"


class ServerNotFound(GatewayError):
    status_code = 404
    error_type = "invalid_request_error"
    code = "server_not_found"


def refusal(config: MCPServerConfig, allow_list: Sequence[Sequence[str]]) -> str | None:
    """Why an admin may not add this server at run time, or None."""
    if config.headers_env:
        return "`headers_env` is for the config file only: it reads the gateway's environment."
    if config.transport != "stdio":
        return None
    if config.env or config.cwd:
        return "A stdio server added at run time takes no `env` or `cwd`."
    command_line = [config.command or "", *config.args]
    if not any(list(allowed) == command_line for allowed in allow_list):
        return "This command line is not on `tool_catalog.stdio_allow_list`."
    return None


class RuntimeServers:
    """The stored servers, and the running catalog they are applied to (None: no MCP catalog,
    e.g. a gateway given its tools by an embedding program)."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        catalog: MCPToolCatalog | None,
        config_names: frozenset[str],
        allow_list: Sequence[Sequence[str]],
    ) -> None:
        self._sessions = sessions
        self._catalog = catalog
        self._config_names = config_names
        self._allow_list = allow_list

    async def stored(self) -> dict[str, MCPServerConfig]:
        async with self._sessions() as session:
            rows = await session.scalars(select(RuntimeMCPServer).order_by(RuntimeMCPServer.name))
            return {row.name: MCPServerConfig.model_validate(row.config) for row in rows}

    async def add_stored(self, environ: Mapping[str, str]) -> None:
        """At start: adds every stored server the config file does not define."""
        if self._catalog is None:
            return
        for name, config in (await self.stored()).items():
            problem = refusal(config, self._allow_list)
            if name in self._config_names or problem is not None:
                log.warning("runtime_server_skipped", server=name, reason=problem or "in config")
                continue
            self._catalog.add_server(
                name, config.transport, policy_of(config), backend_factory(config, environ)
            )

    async def put(self, config: MCPServerConfig, actor_key_id: int, create: bool) -> None:
        catalog = self._writable(config.name)
        problem = refusal(config, self._allow_list)
        if problem is not None:
            raise InvalidRequest(problem, param="command")
        async with self._sessions.begin() as session:
            row = await session.get(RuntimeMCPServer, config.name, with_for_update=True)
            if create and row is not None:
                raise ServerConflict(f"A server named `{config.name}` already exists.")
            if not create and row is None:
                raise ServerNotFound(f"No runtime server named `{config.name}`.", param="name")
            if row is None:
                row = RuntimeMCPServer(name=config.name)
                session.add(row)
            row.config = config.model_dump(mode="json")
            row.updated_by_key_id = actor_key_id
            session.add(_audit("server.saved", config.name, actor_key_id, row.config))
        await catalog.remove_server(config.name)
        # Runtime servers never read the environment (refused above), so none is passed.
        catalog.add_server(
            config.name, config.transport, policy_of(config), backend_factory(config, {})
        )
        await catalog.start()

    async def delete(self, name: str, actor_key_id: int) -> None:
        catalog = self._writable(name)
        async with self._sessions.begin() as session:
            row = await session.get(RuntimeMCPServer, name)
            if row is None:
                raise ServerNotFound(f"No runtime server named `{name}`.", param="name")
            await session.delete(row)
            session.add(_audit("server.deleted", name, actor_key_id, row.config))
        await catalog.remove_server(name)

    def _writable(self, name: str) -> MCPToolCatalog:
        if self._catalog is None:
            raise ServerConflict("This gateway's tool catalog does not take runtime servers.")
        if name in self._config_names:
            raise ServerConflict(f"`{name}` is defined in the config file; change it there.")
        return self._catalog


def _audit(action: str, name: str, actor_key_id: int, config: dict[str, Any]) -> AuditEvent:
    return AuditEvent(actor_key_id=actor_key_id, action=action, detail={"server": name, **config})
