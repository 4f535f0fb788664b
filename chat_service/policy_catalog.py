"""A tool catalog that applies the admins' stored tool policies (see ``tool_policies``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from chat_service.refreshing_catalog import RefreshingCatalog
from chat_service.tool_policies import ToolPolicies, ToolPolicy
from mcp_client.config import BundleConfig
from mcp_client.index import offered_to
from mcp_client.results import error_result
from mcp_client.types import StandardizedTool, ToolCatalog, ToolResult


class ToolPolicySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    refresh_seconds: float = Field(
        5.0, gt=0, description="how often policies other replicas changed are re-read"
    )


class PolicyCatalog(RefreshingCatalog):
    """Wraps a catalog; every tool it hands out carries the stored policy for its name.

    The replica that saves a policy refreshes at once; the others within ``refresh_seconds``.
    """

    def __init__(
        self,
        inner: ToolCatalog,
        policies: ToolPolicies,
        settings: ToolPolicySettings,
        bundles: Sequence[BundleConfig],
    ) -> None:
        super().__init__(inner, settings.refresh_seconds, "tool-policies")
        self._bundles = bundles
        self._policies = policies
        self._current: Mapping[str, ToolPolicy] = {}

    async def refresh(self) -> None:
        self._current = await self._policies.all()

    async def change(self, name: str, changes: dict[str, Any], actor_key_id: int) -> ToolPolicy:
        """Stores an admin's change and applies it here at once."""
        policy = await self._policies.update(name, changes, actor_key_id)
        await self.refresh()
        return policy

    def stored(self, name: str) -> ToolPolicy | None:
        return self._current.get(name)

    def _effective(self, tool: StandardizedTool) -> StandardizedTool:
        policy = self._current.get(tool.name)
        return tool if policy is None else policy.apply(tool)

    def get_tools_for_llm(
        self, roles: Iterable[str], bundle: str | None = None
    ) -> list[StandardizedTool]:
        # Visibility is decided again here, after the policy, since it may change roles.
        return offered_to(self.all_tools(), roles, self._bundles, bundle)

    def get(self, name: str) -> StandardizedTool | None:
        tool = self._inner.get(name)
        return None if tool is None else self._effective(tool)

    def all_tools(self) -> list[StandardizedTool]:
        return [self._effective(tool) for tool in self._inner.all_tools()]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], timeout: float | None = None
    ) -> ToolResult:
        tool = self.get(name)
        if tool is not None and not tool.enabled:
            return error_result(f"the tool `{name}` is disabled by an administrator")
        return await self._inner.call_tool(name, arguments, timeout)
