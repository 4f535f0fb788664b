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

from db.refresher import Refresher
from governance.approval_rules import ApprovalRules
from governance.keys import KeyDirectory, KeyState
from governance.offered import Offer, OfferedTools
from governance.pinning import Pinning
from governance.pins import PinStatus, PinView
from governance.policies import AppliedPolicies, ToolPolicy, ToolPolicySettings
from governance.verdict import Facts, Ticket, Verdict, judge
from guardrails import (
    Action,
    Actions,
    Detector,
    Direction,
    Finding,
    Guardrails,
    HttpClassifier,
    Screening,
    redact_value,
)
from llm_service.types import ToolCall
from mcp_client.config import CatalogSettings, MCPServerConfig
from mcp_client.hooks import NO_HOOKS, CallHooks
from mcp_client.index import in_bundle
from mcp_client.types import (
    CatalogPart,
    PartedCatalog,
    StandardizedTool,
    ToolCatalog,
    ToolResult,
)
from mcp_client.validation import ArgumentCheck


def destructive(tool: StandardizedTool) -> bool:
    """The server hints that the tool may destroy something (and does not claim read-only)."""
    hints = tool.annotations
    return hints.get("destructiveHint") is True and hints.get("readOnlyHint") is not True


class ToolGovernance:
    """Build it with ``governance.build.build_tool_governance``, then ``start``; ``aclose`` at
    the end."""

    def __init__(
        self,
        catalog: ToolCatalog,
        *,
        catalog_settings: CatalogSettings,
        policies: AppliedPolicies,
        policy_settings: ToolPolicySettings,
        pinning: Pinning,
        config_servers: Sequence[MCPServerConfig] = (),
        keys: KeyDirectory | None = None,
        guardrails: Guardrails | None = None,
        classifier: HttpClassifier | None = None,
    ) -> None:
        self._catalog = catalog
        self._guardrails = guardrails
        self._classifier = classifier
        self._config_servers = {server.name: server for server in config_servers}
        self._keys = keys
        self._checks: dict[str, ArgumentCheck] = {}  # by definition hash: compiled once
        # Tool name -> the server it last came from: a degraded server's tools leave the
        # catalog, and a call to one is "temporarily unavailable", not "unknown".
        self._last_server: dict[str, str] = {}
        self._bundles = catalog_settings.bundles
        self._policies = policies
        self._pinning = pinning
        self._offered = OfferedTools(self._offerable, catalog_settings.bundles)
        # A catalog that does not say which servers changed is compared whole on every ask.
        self._parts = catalog.parts if isinstance(catalog, PartedCatalog) else self._one_part
        self._whole = CatalogPart(0, ())
        self._generations = itertools.count(1)
        self._refreshers = [
            Refresher("tool-policies", policies.refresh, policy_settings.refresh_seconds)
        ]
        if pinning.enabled:
            self._refreshers.append(
                Refresher("tool-pins", self._refresh_pins, pinning.settings.refresh_seconds)
            )

    # -- lifecycle

    async def start(self) -> None:
        """Reads the admins' policies and pins over the catalog's tools (start the tool servers
        first, so the pins see what they discovered)."""
        await self._policies.refresh()
        await self._refresh_pins()
        for refresher in self._refreshers:
            refresher.start()

    async def aclose(self) -> None:
        for refresher in reversed(self._refreshers):
            await refresher.aclose()
        if self._classifier is not None:
            await self._classifier.aclose()

    # -- which tools there are, and who may see them

    def offer(self, roles: Iterable[str], bundle: str | None = None) -> Offer:
        """The tools these roles are offered (narrowed to ``bundle`` when given; a bundle that
        does not exist selects nothing): enabled, allowed, and not held for review. The same
        ``Offer`` until a server's tools, a policy, a pin or the trusted servers change, so what
        is derived from it (``Offer.specs``, a serialized listing) is kept with it."""
        state = (self._policies.generation, self._pinning.version())
        return self._offered.offer(frozenset(roles), bundle, self._parts(), state)

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
            guardrails=self._guardrails,
            bundles=frozenset() if tool is None else self._bundles_of(tool),
            admin_guardrails=None if tool is None else self._policies.guardrails(tool),
        )

    def _bundles_of(self, tool: StandardizedTool) -> frozenset[str]:
        return frozenset(bundle.name for bundle in self._bundles if in_bundle(tool, bundle))

    def _degraded(self, server: str) -> bool:
        health = self._catalog.status().get(server)
        return health is not None and health.as_dict().get("state") == "degraded"

    def _check(self, tool: StandardizedTool) -> ArgumentCheck:
        check = self._checks.get(tool.definition_hash)
        if check is None:
            check = self._checks[tool.definition_hash] = ArgumentCheck(tool.parameters)
        return check

    async def run(
        self, ticket: Ticket, timeout: float | None = None, *, hooks: CallHooks = NO_HOOKS
    ) -> ToolResult:
        """Runs what a decision let through (``Verdict.ticket``), exactly: that definition, on
        its server, with its checked arguments; nothing is looked up or checked again here (the
        MCP client refuses a definition its server no longer lists). Never raises for tool
        failures: returns an error result. ``hooks`` hear the call's progress and the server's
        requests for input."""
        return await self._catalog.run(ticket.tool, ticket.arguments, timeout, hooks=hooks)

    # -- guardrails on what tools return

    async def screen_result(
        self, ticket: Ticket, result: ToolResult
    ) -> tuple[ToolResult, Screening]:
        """What the model may see of a result, by the guardrails for the ticket's tool:
        redacted, withheld (a denial names the rule and detector), cut past the scan budget,
        or as it came. Structured content goes when the text was changed: the model sees one
        account, the screened one. Without guardrails the result passes unscreened."""
        tool = ticket.tool
        if self._guardrails is None:
            return result, Screening(Direction.RESULTS)
        bundles, admin = self._bundles_of(tool), self._policies.guardrails(tool)
        screening = self._guardrails.screen_result(
            result.content,
            tool.server,
            tool.original_name,
            bundles,
            admin,
            extra=await self._classified(result.content, tool, bundles, admin),
        )
        if screening.action is Action.DENY:
            withheld = f"The result of `{tool.name}` was withheld. " + screening.explain("result")
            return replace(
                result, content=withheld, is_error=True, structured=None, images=()
            ), screening
        if screening.value != result.content:
            return replace(result, content=screening.value, structured=None), screening
        return result, screening

    async def _classified(
        self, text: str, tool: StandardizedTool, bundles: frozenset[str], admin: Actions | None
    ) -> tuple[Finding, ...]:
        """The external classifier's findings, asked only where the injection detector runs."""
        if self._classifier is None or self._guardrails is None or not text:
            return ()
        actions = self._guardrails.actions(
            Direction.RESULTS, tool.server, tool.original_name, bundles, admin
        )
        if actions[Detector.INJECTION][0] is Action.ALLOW:
            return ()
        return await self._classifier.findings(text, tool.server, tool.original_name)

    def screen_arguments(self, tool: StandardizedTool, arguments: dict[str, Any]) -> Screening:
        """What the guardrails find in a call's arguments, with the arguments as a reviewer may
        see them (each finding redacted, whatever the action): for the approval card."""
        if self._guardrails is None:
            return Screening(Direction.ARGUMENTS, value=arguments)
        screening = self._guardrails.screen_arguments(
            arguments,
            tool.server,
            tool.original_name,
            self._bundles_of(tool),
            self._policies.guardrails(tool),
        )
        return replace(screening, value=redact_value(arguments, screening.findings))

    # -- admins' tool policies

    def guardrail_actions(self, tool: StandardizedTool) -> dict[str, dict[str, dict[str, str]]]:
        """The guardrails in force for the tool, per direction and detector: the action and
        the rule that set it (for the admin API and the Tools page)."""
        if self._guardrails is None:
            return {}
        admin = self._policies.guardrails(tool)
        bundles = self._bundles_of(tool)
        return {
            direction.value: {
                detector.value: {"action": action.value, "rule": rule}
                for detector, (action, rule) in self._guardrails.actions(
                    direction, tool.server, tool.original_name, bundles, admin
                ).items()
            }
            for direction in (Direction.ARGUMENTS, Direction.RESULTS)
        }

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

    async def _refresh_pins(self) -> None:
        await self._pinning.refresh(self._catalog.all_tools())
