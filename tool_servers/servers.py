"""The one door to the tool servers: their health, the servers admins add at run time, and the
OAuth grants and connections that let the gateway reach servers that need a person's consent.

Below it the MCP catalog (or an embedding program's) runs the servers; ``governance`` decides
what a principal may see and run of their tools.
"""

from __future__ import annotations

from collections.abc import Mapping, Set

from db.refresher import Refresher
from mcp_client.catalog import MCPToolCatalog
from mcp_client.config import CatalogSettings, MCPServerConfig
from mcp_client.types import ServerHealth, ToolCatalog
from tool_servers.connect import ServerConnections
from tool_servers.grants import GrantWatch, ServerGrants
from tool_servers.runtime import RuntimeServers
from tool_servers.sync import RuntimeServerSync


class ToolServers:
    """Build it with ``tool_servers.build.build_tool_servers``, ``start`` it before the
    governance over its catalog, ``aclose`` it after."""

    def __init__(
        self,
        catalog: ToolCatalog,
        *,
        catalog_settings: CatalogSettings,
        runtime: RuntimeServers,
        sync: RuntimeServerSync | None,
        grants: ServerGrants,
    ) -> None:
        self.catalog = catalog
        self.grants = grants
        self.connections: ServerConnections | None = None  # set by `build_tool_servers`
        self._runtime = runtime
        self._sync = sync
        self._discovery_timeout = catalog_settings.discovery_timeout
        self._refreshers: list[Refresher] = []
        if sync is not None:
            self._refreshers.append(
                Refresher("runtime-servers", sync.refresh, sync.refresh_seconds)
            )
        if isinstance(catalog, MCPToolCatalog):
            watch = GrantWatch(grants, catalog)
            seconds = catalog_settings.runtime_servers_refresh_seconds
            self._refreshers.append(Refresher("server-grants", watch.refresh, seconds))

    async def start(self) -> None:
        """Connects the config file's and the stored servers and discovers their tools. A
        failing server is degraded and retried in the background; start never fails because of
        one."""
        if self._sync is not None:
            await self._sync.add_stored()
        await self.catalog.start()
        if self._sync is not None:
            await self._sync.refresh()
        for refresher in self._refreshers:
            refresher.start()

    async def aclose(self) -> None:
        for refresher in reversed(self._refreshers):
            await refresher.aclose()
        await self.catalog.aclose()

    def status(self) -> Mapping[str, ServerHealth]:
        """Each tool server's health, by name."""
        return self.catalog.status()

    def trusted(self) -> Set[str]:
        """Servers marked ``trusted: true``, in the config file or at run time."""
        return self._runtime.trusted()

    async def stored(self) -> dict[str, MCPServerConfig]:
        """The servers admins added at run time (still valid settings), by name."""
        return await self._runtime.stored()

    async def put(self, config: MCPServerConfig, actor_key_id: int, *, create: bool) -> None:
        """Stores (and audits) a new or changed runtime server and starts it here before
        returning. ``InvalidRequest`` when the allow-lists refuse it, ``ServerConflict`` for a
        config file's server (or an existing one on create), ``ServerNotFound`` otherwise."""
        await self._runtime.put(config, actor_key_id, create)

    async def delete(self, name: str, actor_key_id: int) -> None:
        """Removes (and audits) a runtime server and stops it here; ``ServerNotFound`` when
        there is none, ``ServerConflict`` for a config file's server."""
        await self._runtime.delete(name, actor_key_id)

    async def reconnect(self, name: str) -> None:
        """Connects a (degraded) server now, e.g. just authorized, and waits up to the discovery
        timeout for it to be ready; other replicas follow within their refresh."""
        catalog = self.catalog
        if not isinstance(catalog, MCPToolCatalog):
            return
        catalog.reconnect(name)

        def ready() -> bool:
            health = catalog.status().get(name)
            return health is not None and health.state == "ready"

        await catalog.wait_for(ready, self._discovery_timeout)
