"""MCP servers admins add, change and remove at run time, stored in the database.

They are merged with the config file's servers (a config server of the same name wins) and
applied to this replica's catalog at once; other replicas pick changes up within their refresh
(``tool_servers.sync``). What may be added at all is ``tool_servers.rules``.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from typing import Any

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from db.base import utcnow
from db.models import AuditEvent, RuntimeMCPServer
from llm_service.errors import InvalidRequest
from mcp_client.config import MCPServerConfig
from tool_servers.errors import ServerConflict, ServerNotFound
from tool_servers.grants import NO_KEY, ServerGrants, uses_consent
from tool_servers.rules import RuntimeServerRules
from tool_servers.sync import RuntimeServerSync, stored_servers


class RuntimeServers:
    """Stores admins' changes and applies them to the running catalog through ``sync`` (None: this
    gateway has no MCP catalog, e.g. one given its tools by an embedding program, so it takes no
    servers)."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        sync: RuntimeServerSync | None,
        config_servers: Sequence[MCPServerConfig],
        rules: RuntimeServerRules,
        grants: ServerGrants,
    ) -> None:
        self._sessions = sessions
        self._grants = grants
        self._sync = sync
        self._config_names = frozenset(server.name for server in config_servers)
        self._trusted_in_config = frozenset(s.name for s in config_servers if s.trusted)
        self._rules = rules

    def trusted(self) -> Set[str]:
        """Servers marked ``trusted: true`` in the config file, or at run time as applied here."""
        at_run_time = self._sync.trusted() if self._sync is not None else frozenset()
        return self._trusted_in_config | at_run_time

    async def stored(self) -> dict[str, MCPServerConfig]:
        """The stored servers that are still valid settings, by name."""
        servers: dict[str, MCPServerConfig] = {}
        for name, row in (await stored_servers(self._sessions)).items():
            try:
                servers[name] = MCPServerConfig.model_validate(row.config)
            except ValidationError:
                continue
        return servers

    async def put(self, config: MCPServerConfig, actor_key_id: int, create: bool) -> None:
        """Stores a new (``create``) or changed server and starts it here before returning.

        ``InvalidRequest`` (400, naming the field) when the allow-lists refuse it,
        ``ServerConflict`` (409) for a config file's server or an existing one on create,
        ``ServerNotFound`` (404) for an unknown one otherwise.
        """
        sync = self._writable(config.name)
        self._rules.check(config)
        if uses_consent(config) and not self._grants.has_key:
            raise InvalidRequest(f"`auth`: {NO_KEY}.", param="auth")
        async with self._sessions.begin() as session:
            row = await session.get(RuntimeMCPServer, config.name, with_for_update=True)
            if create and row is not None:
                raise ServerConflict(f"A server named `{config.name}` already exists.")
            if not create and row is None:
                raise ServerNotFound(f"No runtime server named `{config.name}`.", param="name")
            if row is None:
                row = RuntimeMCPServer(name=config.name, created_at=utcnow())
                session.add(row)
            row.config = config.model_dump(mode="json")
            row.updated_at = utcnow()
            row.updated_by_key_id = actor_key_id
            session.add(_audit("server.saved", config.name, actor_key_id, row.config))
        await sync.refresh()

    async def delete(self, name: str, actor_key_id: int) -> None:
        """Removes a stored server and stops it here; ``ServerNotFound`` when there is none."""
        sync = self._writable(name)
        async with self._sessions.begin() as session:
            row = await session.get(RuntimeMCPServer, name)
            if row is None:
                raise ServerNotFound(f"No runtime server named `{name}`.", param="name")
            await session.delete(row)
            await self._grants.forget(session, name)
            session.add(_audit("server.deleted", name, actor_key_id, row.config))
        await sync.refresh()

    def _writable(self, name: str) -> RuntimeServerSync:
        if self._sync is None:
            raise ServerConflict("This gateway's tool catalog does not take runtime servers.")
        if name in self._config_names:
            raise ServerConflict(f"`{name}` is defined in the config file; change it there.")
        return self._sync


def _audit(action: str, name: str, actor_key_id: int, config: dict[str, Any]) -> AuditEvent:
    return AuditEvent(actor_key_id=actor_key_id, action=action, detail={"server": name, **config})
