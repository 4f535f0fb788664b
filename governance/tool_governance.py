"""The one door to the tools: what a principal may see and run, and the admins' controls.

Under it: the MCP catalog (or an embedding program's), the servers admins add at run time, the
admins' tool policies and tool pinning, each kept fresh from the database on every replica.
Callers ask their question here and need not know how the answer is made.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from governance.approval_rules import ApprovalRules
from governance.keys import KeyDirectory, KeyState
from governance.offered import Offer, OfferedTools
from governance.pinning import Pinning
from governance.pins import PinStatus, PinView
from governance.policies import AppliedPolicies, ToolPolicy, ToolPolicySettings
from governance.refresher import Refresher
from governance.runtime_servers import RuntimeServers
from governance.server_connect import ServerConnections
from governance.server_grants import GrantWatch, ServerGrants
from governance.server_sync import RuntimeServerSync
from governance.verdict import Facts, Verdict, judge
from llm_service.types import ToolCall, ToolSpec
from mcp_client.catalog import MCPToolCatalog
from mcp_client.config import CatalogSettings, MCPServerConfig
from mcp_client.hooks import NO_HOOKS, CallHooks
from mcp_client.results import error_result
from mcp_client.types import (
    CatalogPart,
    PartedCatalog,
    ServerHealth,
    StandardizedTool,
    ToolCatalog,
    ToolResult,
)
from mcp_client.validation import ArgumentCheck


def destructive(tool: StandardizedTool) -> bool:
    """The server hints that the tool may destroy something (and does not claim read-only)."""
    hints = tool.annotations
    return hints.get("destructiveHint") is True and hints.get("readOnlyHint") is not True


def _specs(tools: Sequence[StandardizedTool]) -> tuple[ToolSpec, ...]:
    return tuple(ToolSpec(tool.name, tool.description, tool.parameters) for tool in tools)


class ToolGovernance:
    """Build it with ``governance.build.build_tool_governance``, then ``start``; ``aclose`` at
    the end."""

    def __init__(
        self,
        catalog: ToolCatalog,
        *,
        catalog_settings: CatalogSettings,
        servers: RuntimeServers,
        sync: RuntimeServerSync | None,
        policies: AppliedPolicies,
        policy_settings: ToolPolicySettings,
        pinning: Pinning,
        config_servers: Sequence[MCPServerConfig] = (),
        keys: KeyDirectory | None = None,
        grants: ServerGrants | None = None,
    ) -> None:
        self._catalog = catalog
        self.grants = grants
        self.connections: ServerConnections | None = None  # set by `build_tool_governance`
        self._config_servers = {server.name: server for server in config_servers}
        self._keys = keys
        self._checks: dict[str, ArgumentCheck] = {}  # by definition hash: compiled once
        # Tool name -> the server it last came from: a degraded server's tools leave the
        # catalog, and a call to one is "temporarily unavailable", not "unknown".
        self._last_server: dict[str, str] = {}
        self._bundles = catalog_settings.bundles
        self._servers = servers
        self._sync = sync
        self._policies = policies
        self._pinning = pinning
        self._offered = OfferedTools(self._offerable, catalog_settings.bundles)
        # A catalog that does not say which servers changed is compared whole on every ask.
        self._parts = catalog.parts if isinstance(catalog, PartedCatalog) else self._one_part
        self._whole = CatalogPart(0, ())
        self._generations = itertools.count(1)
        self._refreshers: list[Refresher] = []
        if sync is not None:
            self._refreshers.append(
                Refresher("runtime-servers", sync.refresh, sync.refresh_seconds)
            )
        self._refreshers.append(
            Refresher("tool-policies", policies.refresh, policy_settings.refresh_seconds)
        )
        if grants is not None and isinstance(catalog, MCPToolCatalog):
            watch = GrantWatch(grants, catalog)
            seconds = catalog_settings.runtime_servers_refresh_seconds
            self._refreshers.append(Refresher("server-grants", watch.refresh, seconds))
        if pinning.enabled:
            self._refreshers.append(
                Refresher("tool-pins", self._refresh_pins, pinning.settings.refresh_seconds)
            )

    # -- lifecycle

    async def start(self) -> None:
        """Discovers the tools and reads the admins' state. A failing tool server is degraded
        and retried in the background; start never fails because of one."""
        if self._sync is not None:
            await self._sync.add_stored()
        await self._catalog.start()
        if self._sync is not None:
            await self._sync.refresh()
        await self._policies.refresh()
        await self._refresh_pins()
        for refresher in self._refreshers:
            refresher.start()

    async def aclose(self) -> None:
        for refresher in reversed(self._refreshers):
            await refresher.aclose()
        await self._catalog.aclose()

    # -- which tools there are, and who may see them

    def visible_tools(
        self, roles: Iterable[str], bundle: str | None = None
    ) -> list[StandardizedTool]:
        """The tools these roles may be offered (narrowed to ``bundle`` when given; a bundle that
        does not exist selects nothing): enabled, allowed, and not held for review."""
        return list(self.offer(roles, bundle).tools)

    def offer(self, roles: Iterable[str], bundle: str | None = None) -> Offer:
        """``visible_tools`` as a kept ``Offer``: the same object until a server's tools, a
        policy, a pin or the trusted servers change, so what is derived from it may be kept."""
        state = (self._policies.generation, self._pinning.version())
        return self._offered.offer(frozenset(roles), bundle, self._parts(), state)

    def tool_specs(self, roles: Iterable[str], bundle: str | None = None) -> tuple[ToolSpec, ...]:
        """``visible_tools`` as a model is offered them, built once per ``offer``."""
        return self.offer(roles, bundle).derived(ToolSpec, _specs)

    def _offerable(self, tools: Sequence[StandardizedTool]) -> tuple[StandardizedTool, ...]:
        effective = (self._effective(tool) for tool in tools)
        return tuple(tool for tool in effective if not self._pinning.held(tool))

    def _one_part(self) -> Mapping[str, CatalogPart]:
        tools = tuple(self._catalog.all_tools())
        if tools != self._whole.tools:
            self._whole = CatalogPart(next(self._generations), tools)
        return {"": self._whole}

    def bundle_names(self) -> list[str]:
        return self._catalog.bundle_names()

    def tool(self, name: str) -> StandardizedTool | None:
        """The tool of this catalog name with its effective policy, whatever the roles, held for
        review or not; None when there is none."""
        tool = self._catalog.get(name)
        return None if tool is None else self._effective(tool)

    def all_tools(self) -> list[StandardizedTool]:
        """Every tool with its effective policy, whatever the roles (for administrators)."""
        return [self._effective(tool) for tool in self._catalog.all_tools()]

    def _effective(self, tool: StandardizedTool) -> StandardizedTool:
        self._last_server[tool.name] = tool.server
        applied = self._policies.apply(tool)
        if applied.requires_approval or not destructive(tool) or self._waived(tool):
            return applied
        return replace(applied, requires_approval=True)

    def _waived(self, tool: StandardizedTool) -> bool:
        """True when an operator or admin said explicitly that this tool needs no approval: MCP
        annotations are the server's untrusted hints and may only make things stricter."""
        stored = self._policies.stored(tool)
        if stored is not None and stored.requires_approval is not None:
            return True
        config = self._config_servers.get(tool.server)
        if config is None:
            return False
        override = config.tools.get(tool.original_name)
        if override is not None and override.requires_approval is not None:
            return True
        return "requires_approval" in config.model_fields_set

    def held_for_review(self, tool: StandardizedTool) -> bool:
        """True while this definition of the tool awaits an admin's approval."""
        return self._pinning.held(tool)

    # -- running calls

    def may_run(self, call: ToolCall, roles: Iterable[str]) -> Verdict:
        """May a principal with these roles run this call now, and if not why (no key check)."""
        return judge(call, self._facts(call.name, None, None, None), roles)

    async def decide(
        self,
        call: ToolCall,
        key_id: int,
        roles: Iterable[str] | None,
        *,
        proposed_hash: str | None = None,
        server: str | None = None,
        key: KeyState | None = None,
    ) -> Verdict:
        """The one decision, taken at every ``Stage``: may the holder of ``key_id`` run this
        call with these arguments now, and if not why. Tool known, enabled, not held for review,
        its server up; the key not revoked and its current roles allowed (``roles`` stand in
        when no key directory was given; None: not checked again); the definition still
        ``proposed_hash``; the arguments valid (undeclared properties and ``format`` included).
        ``server``: where the call's tool was when it was proposed; ``key``: the key's state
        (``key_state``) when the caller has just read it for decisions taken at the same moment
        (a round's calls, each proposed and started at once), else it is read now."""
        if key is None:
            key = await self.key_state(key_id)
        return judge(call, self._facts(call.name, server, key, proposed_hash), roles)

    async def key_state(self, key_id: int) -> KeyState | None:
        """The key's state now; None without a key directory. An unknown key is inactive."""
        if self._keys is None:
            return None
        state = await self._keys.key_state(key_id)
        return state or KeyState(key_id, active=False, roles=frozenset(), owner="")

    def _facts(
        self, name: str, server: str | None, key: KeyState | None, proposed_hash: str | None
    ) -> Facts:
        tool = self.tool(name)
        origin = tool.server if tool is not None else server or self._last_server.get(name)
        check = None if tool is None else self._check(tool)
        return Facts(
            tool=tool,
            held=tool is not None and self._pinning.held(tool),
            server_down=origin is not None and self._degraded(origin),
            key=key,
            proposed_hash=proposed_hash,
            check=check,
            rules=None if tool is None else self._policies.approval_rules(tool),
        )

    def _degraded(self, server: str) -> bool:
        health = self._catalog.status().get(server)
        return health is not None and health.as_dict().get("state") == "degraded"

    def _check(self, tool: StandardizedTool) -> ArgumentCheck:
        check = self._checks.get(tool.definition_hash)
        if check is None:
            check = self._checks[tool.definition_hash] = ArgumentCheck(tool.parameters)
        return check

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        timeout: float | None = None,
        *,
        hooks: CallHooks = NO_HOOKS,
    ) -> ToolResult:
        """Runs one call, unless its tool is now held or disabled (the policy may have changed
        since the call was decided). Never raises for tool failures: returns an error result.
        ``hooks`` hear the call's progress and the server's requests for input."""
        tool = self.tool(name)
        if tool is not None and self._pinning.held(tool):
            return error_result(f"the tool `{name}` is held for review")
        if tool is not None and not tool.enabled:
            return error_result(f"the tool `{name}` is disabled by an administrator")
        return await self._catalog.call_tool(name, arguments, timeout, hooks=hooks)

    # -- admins' tool policies

    def admin_policy(self, name: str) -> ToolPolicy | None:
        """The policy an admin stored for the tool of this catalog name, if any (the config
        file's otherwise)."""
        tool = self._catalog.get(name)
        return None if tool is None else self._policies.stored(tool)

    def approval_rules(self, tool: StandardizedTool) -> ApprovalRules | None:
        """The tool's approval rules in force: an admin's, else the config file's."""
        return self._policies.approval_rules(tool)

    async def change_policy(
        self, name: str, changes: dict[str, Any], actor_key_id: int
    ) -> ToolPolicy | None:
        """Stores and audits an admin's change (a field set to None follows the config file
        again) to the tool of this catalog name, kept by the tool's identity (server and name
        there); it applies here at once, on other replicas within their refresh. None when there
        is no such tool."""
        tool = self._catalog.get(name)
        if tool is None:
            return None
        return await self._policies.change(tool, changes, actor_key_id)

    # -- tool reviews (pinning)

    async def reviews(self, status: PinStatus = PinStatus.PENDING_REVIEW) -> list[PinView]:
        """Tool definitions in this review state; definitions discovered since the last refresh
        are pinned first, so the list is current."""
        await self._refresh_pins()
        return await self._pinning.pins.in_status(status)

    async def previous_review(self, pin: PinView) -> PinView | None:
        """The latest approved definition of the same tool, to compare against."""
        return await self._pinning.pins.previous(pin)

    async def decide_review(self, pin_id: int, approve: bool, actor_key_id: int) -> PinView | None:
        """Approves or rejects a pending definition (audited) and applies it here at once; None
        when the review does not exist or is already decided."""
        pin = await self._pinning.pins.decide(pin_id, approve, actor_key_id)
        if pin is not None:
            await self._refresh_pins()
        return pin

    # -- tool servers

    def server_status(self) -> Mapping[str, ServerHealth]:
        """Each tool server's health, by name."""
        return self._catalog.status()

    async def stored_servers(self) -> dict[str, MCPServerConfig]:
        """The servers admins added at run time (still valid settings), by name."""
        return await self._servers.stored()

    async def put_server(self, config: MCPServerConfig, actor_key_id: int, *, create: bool) -> None:
        """Stores (and audits) a new or changed runtime server and starts it here before
        returning. ``InvalidRequest`` when the allow-lists refuse it, ``ServerConflict`` for a
        config file's server (or an existing one on create), ``ServerNotFound`` otherwise."""
        await self._servers.put(config, actor_key_id, create)

    async def delete_server(self, name: str, actor_key_id: int) -> None:
        """Removes (and audits) a runtime server and stops it here; ``ServerNotFound`` when
        there is none, ``ServerConflict`` for a config file's server."""
        await self._servers.delete(name, actor_key_id)

    def server_config(self, name: str) -> MCPServerConfig | None:
        """A config file's server of this name (runtime servers: ``stored_servers``)."""
        return self._config_servers.get(name)

    async def reconnect_server(self, name: str, timeout: float) -> None:
        """Connects a (degraded) server now, e.g. just authorized, and waits up to ``timeout``
        for it to be ready; other replicas follow within their refresh."""
        catalog = self._catalog
        if not isinstance(catalog, MCPToolCatalog):
            return
        catalog.reconnect(name)

        def ready() -> bool:
            health = catalog.status().get(name)
            return health is not None and health.state == "ready"

        await catalog.wait_for(ready, timeout)

    async def _refresh_pins(self) -> None:
        await self._pinning.refresh(self._catalog.all_tools())
