"""Assembles the tool servers from settings: the MCP catalog (unless an embedding program gives
its own), the runtime servers and their sync, the grants and the connections admins make."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from mcp_client.catalog import MCPToolCatalog
from mcp_client.config import CatalogSettings, MCPServerConfig
from mcp_client.grant_store import MemoryGrantStore
from mcp_client.types import ToolCatalog
from tool_servers.connect import ServerConnections
from tool_servers.grants import ServerGrants, uses_consent
from tool_servers.rules import RuntimeServerRules
from tool_servers.runtime import RuntimeServers
from tool_servers.servers import ToolServers
from tool_servers.sync import RuntimeServerSync


def build_tool_servers(
    sessions: async_sessionmaker[AsyncSession],
    *,
    catalog_settings: CatalogSettings,
    config_servers: Sequence[MCPServerConfig],
    environ: Mapping[str, str],
    tools: ToolCatalog | None = None,
    grants: ServerGrants | None = None,
) -> ToolServers:
    """The MCP catalog of ``config_servers`` and the stored runtime servers, unless an
    embedding program gave its own ``tools`` (which take no runtime servers).

    ``environ`` supplies the values named by each config server's ``headers_env``. ``grants``
    keeps authorization-code servers' tokens, shared by the replicas (None: a gateway without
    a database key, whose such servers say so).
    """
    rules = RuntimeServerRules.from_settings(catalog_settings)
    grants = grants or ServerGrants(sessions, None)
    sync = None
    if tools is None:
        stores = {s.name: grants.store(s) for s in config_servers if uses_consent(s)}
        mcp = MCPToolCatalog.from_config(
            config_servers,
            catalog_settings,
            environ,
            tokens=lambda name: stores.get(name) or MemoryGrantStore(),
        )
        config_names = [server.name for server in config_servers]
        sync = RuntimeServerSync(mcp, sessions, rules, config_names, grants)
        tools = mcp
    runtime = RuntimeServers(sessions, sync, config_servers, rules, grants)
    servers = ToolServers(
        tools, catalog_settings=catalog_settings, runtime=runtime, sync=sync, grants=grants
    )
    by_name = {server.name: server for server in config_servers}

    async def lookup(name: str) -> MCPServerConfig | None:
        return by_name.get(name) or (await runtime.stored()).get(name)

    servers.connections = ServerConnections(grants, lookup, environ, servers.reconnect)
    return servers
