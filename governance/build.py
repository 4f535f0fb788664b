"""Assembles the tool governance from settings: the MCP catalog (unless an embedding program
gives its own), the runtime servers and their sync, policies, pinning, grants and the
connections admins make."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from governance.keys import KeyDirectory
from governance.pinning import Pinning, PinningSettings, ReviewObserver
from governance.pins import ToolPins
from governance.policies import AppliedPolicies, ToolPolicies, ToolPolicySettings
from governance.runtime_servers import RuntimeServers
from governance.server_connect import ServerConnections
from governance.server_grants import ServerGrants, uses_consent
from governance.server_rules import RuntimeServerRules
from governance.server_sync import RuntimeServerSync
from governance.tool_governance import ToolGovernance
from mcp_client.catalog import MCPToolCatalog
from mcp_client.config import CatalogSettings, MCPServerConfig
from mcp_client.grant_store import MemoryGrantStore
from mcp_client.types import ToolCatalog


def build_tool_governance(
    sessions: async_sessionmaker[AsyncSession],
    *,
    catalog_settings: CatalogSettings,
    config_servers: Sequence[MCPServerConfig],
    environ: Mapping[str, str],
    pinning: PinningSettings,
    policies: ToolPolicySettings,
    tools: ToolCatalog | None = None,
    keys: KeyDirectory | None = None,
    on_review_requested: ReviewObserver | None = None,
    grants: ServerGrants | None = None,
) -> ToolGovernance:
    """The MCP catalog of ``config_servers`` and the stored runtime servers, unless an
    embedding program gave its own ``tools`` (which take no runtime servers). ``keys``
    answers for the requester's key at every decision (None: the roles given are used).

    ``environ`` supplies the values named by each config server's ``headers_env``;
    ``on_review_requested`` hears of each definition newly held for review. ``grants``
    keeps authorization-code servers' tokens, shared by the replicas (None: a gateway
    without a database key, whose such servers say so).
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
    servers = RuntimeServers(sessions, sync, config_servers, rules, grants)
    governance = ToolGovernance(
        tools,
        catalog_settings=catalog_settings,
        servers=servers,
        sync=sync,
        policies=AppliedPolicies(ToolPolicies(sessions), policies.approval_rules),
        policy_settings=policies,
        pinning=Pinning(ToolPins(sessions), pinning, servers.trusted, on_review_requested),
        config_servers=config_servers,
        keys=keys,
        grants=grants,
    )
    by_name = {server.name: server for server in config_servers}

    async def lookup(name: str) -> MCPServerConfig | None:
        return by_name.get(name) or (await servers.stored()).get(name)

    async def reconnect(name: str) -> None:
        await governance.reconnect_server(name, catalog_settings.discovery_timeout)

    governance.connections = ServerConnections(grants, lookup, environ, reconnect)
    return governance
