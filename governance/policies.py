"""Tool policies an admin set at run time, stored in the database.

Each is applied on top of the config file's per-tool overrides; a field left unset keeps what
the config says. Every change is audited. A policy names its tool by identity (server and the
tool's name there), so another server offering a tool of the same name never moves it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from db.base import utcnow
from db.models import AuditEvent, ToolPolicyOverride
from governance.approval_rules import ApprovalRules, ConfiguredRules
from guardrails import Actions, ToolGuardrails
from mcp_client.types import StandardizedTool


class ToolPolicySettings(BaseModel):
    """The config file's `tool_policies` section."""

    model_config = ConfigDict(extra="forbid")

    refresh_seconds: float = Field(
        5.0, gt=0, description="how often policies other replicas changed are re-read"
    )
    approval_rules: list[ConfiguredRules] = Field(
        default_factory=list,
        description="approval rules per tool (`server`, `tool`: its name there); an admin's "
        "rules for the tool replace these",
    )

    @field_validator("approval_rules")
    @classmethod
    def _one_entry_per_tool(cls, rules: list[ConfiguredRules]) -> list[ConfiguredRules]:
        seen: set[tuple[str, str]] = set()
        for rule in rules:
            if (rule.server, rule.tool) in seen:
                raise ValueError(f"`{rule.server}` `{rule.tool}` has rules twice")
            seen.add((rule.server, rule.tool))
        return rules


# (server, the tool's name on it); server "" for a policy stored by catalog name before 0009.
ToolIdentity = tuple[str, str]
_BY_CATALOG_NAME = ""


def identity_of(tool: StandardizedTool) -> ToolIdentity:
    return (tool.server, tool.original_name)


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    server: str
    tool_name: str
    enabled: bool | None = None
    roles: frozenset[str] | None = None
    requires_approval: bool | None = None
    approval_rules: ApprovalRules | None = None
    guardrails: Actions | None = None

    def apply(self, tool: StandardizedTool) -> StandardizedTool:
        return replace(
            tool,
            enabled=tool.enabled if self.enabled is None else self.enabled,
            roles=tool.roles if self.roles is None else self.roles,
            requires_approval=(
                tool.requires_approval if self.requires_approval is None else self.requires_approval
            ),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "roles": sorted(self.roles) if self.roles is not None else None,
            "requires_approval": self.requires_approval,
            "approval_rules": (
                self.approval_rules.model_dump() if self.approval_rules is not None else None
            ),
            "guardrails": _guardrails_json(self.guardrails),
        }


def _guardrails_json(actions: Actions | None) -> dict[str, Any] | None:
    if actions is None:
        return None
    dumped: dict[str, Any] = ToolGuardrails(actions).model_dump(mode="json")
    return dumped


def _policy(row: ToolPolicyOverride) -> ToolPolicy:
    return ToolPolicy(
        row.server,
        row.tool_name,
        row.enabled,
        frozenset(row.roles) if row.roles is not None else None,
        row.requires_approval,
        ApprovalRules.model_validate(row.approval_rules)
        if row.approval_rules is not None
        else None,
        ToolGuardrails.model_validate(row.guardrails).root if row.guardrails is not None else None,
    )


class ToolPolicies:
    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], clock: Callable[[], datetime] = utcnow
    ) -> None:
        self._sessions = sessions
        self._clock = clock

    async def all(self) -> dict[ToolIdentity, ToolPolicy]:
        async with self._sessions() as session:
            rows = await session.scalars(select(ToolPolicyOverride))
            return {(row.server, row.tool_name): _policy(row) for row in rows}

    async def update(
        self, tool: StandardizedTool, changes: dict[str, Any], actor_key_id: int
    ) -> ToolPolicy:
        """Sets the given fields (None clears one back to the config's value); others are kept.

        The policy is stored by the tool's identity; one stored by its catalog name before is
        carried over and removed."""
        async with self._sessions.begin() as session:
            row = await self._row(session, tool)
            before = _policy(row).to_json()
            if "enabled" in changes:
                row.enabled = changes["enabled"]
            if "roles" in changes:
                row.roles = sorted(set(changes["roles"])) if changes["roles"] is not None else None
            if "requires_approval" in changes:
                row.requires_approval = changes["requires_approval"]
            if "approval_rules" in changes:
                rules = changes["approval_rules"]
                row.approval_rules = (
                    None if rules is None else ApprovalRules.model_validate(rules).model_dump()
                )
            if "guardrails" in changes:
                row.guardrails = _guardrails_json(
                    None
                    if changes["guardrails"] is None
                    else ToolGuardrails.model_validate(changes["guardrails"]).root
                )
            row.updated_at = self._clock()
            row.updated_by_key_id = actor_key_id
            policy = _policy(row)
            session.add(
                AuditEvent(
                    actor_key_id=actor_key_id,
                    action="tool.policy_changed",
                    tool_name=tool.name,
                    detail={
                        "server": tool.server,
                        "original_name": tool.original_name,
                        "before": before,
                        "after": policy.to_json(),
                    },
                )
            )
            return policy

    @staticmethod
    async def _row(session: AsyncSession, tool: StandardizedTool) -> ToolPolicyOverride:
        row = await session.get(ToolPolicyOverride, identity_of(tool), with_for_update=True)
        legacy = await session.get(
            ToolPolicyOverride, (_BY_CATALOG_NAME, tool.name), with_for_update=True
        )
        if row is None:
            row = ToolPolicyOverride(server=tool.server, tool_name=tool.original_name)
            if legacy is not None:
                row.enabled = legacy.enabled
                row.roles = legacy.roles
                row.requires_approval = legacy.requires_approval
                row.approval_rules = legacy.approval_rules
                row.guardrails = legacy.guardrails
            session.add(row)
        if legacy is not None:
            await session.delete(legacy)
        return row


class AppliedPolicies:
    """The stored policies as this replica applies them. The replica that saves a change applies
    it at once; the others when they next ``refresh``."""

    def __init__(self, store: ToolPolicies, configured: Sequence[ConfiguredRules] = ()) -> None:
        self._store = store
        self._current: Mapping[ToolIdentity, ToolPolicy] = {}
        self.generation = 0  # counts changes of the policies applied here
        self._configured: dict[ToolIdentity, ApprovalRules] = {
            (rules.server, rules.tool): ApprovalRules.model_validate(
                rules.model_dump(exclude={"server", "tool"})
            )
            for rules in configured
        }

    async def refresh(self) -> None:
        current = await self._store.all()
        if current != self._current:
            self._current = current
            self.generation += 1

    async def change(
        self, tool: StandardizedTool, changes: dict[str, Any], actor_key_id: int
    ) -> ToolPolicy:
        """Stores (and audits) an admin's change and applies it here at once."""
        policy = await self._store.update(tool, changes, actor_key_id)
        await self.refresh()
        return policy

    def stored(self, tool: StandardizedTool) -> ToolPolicy | None:
        """The policy stored for this tool: by its identity, else (stored before identities) by
        its catalog name."""
        policy = self._current.get(identity_of(tool))
        return policy or self._current.get((_BY_CATALOG_NAME, tool.name))

    def apply(self, tool: StandardizedTool) -> StandardizedTool:
        policy = self.stored(tool)
        return tool if policy is None else policy.apply(tool)

    def guardrails(self, tool: StandardizedTool) -> Actions | None:
        """An admin's guardrail actions for the tool (None: the config's rules alone)."""
        policy = self.stored(tool)
        return None if policy is None else policy.guardrails

    def approval_rules(self, tool: StandardizedTool) -> ApprovalRules | None:
        """The tool's approval rules: an admin's when set, else the config file's."""
        policy = self.stored(tool)
        if policy is not None and policy.approval_rules is not None:
            return policy.approval_rules
        return self._configured.get(identity_of(tool))
