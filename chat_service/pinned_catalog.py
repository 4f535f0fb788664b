"""A tool catalog that offers only reviewed tool definitions (see ``tool_pins``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Set
from typing import Any

import structlog
from pydantic import BaseModel, ConfigDict, Field

from chat_service.refreshing_catalog import RefreshingCatalog
from chat_service.tool_pins import ToolPins
from mcp_client.results import error_result
from mcp_client.types import StandardizedTool, ToolCatalog, ToolResult

log = structlog.get_logger("chat_service.pinned_catalog")


class PinningSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(
        True, description="hold new and changed tool definitions until an admin approves them"
    )
    trusted_servers: list[str] = Field(
        default_factory=list,
        description="servers whose tools skip review (besides servers marked `trusted: true`)",
    )
    refresh_seconds: float = Field(
        5.0, gt=0, description="how often definitions and decisions are re-read from the database"
    )


class PinnedCatalog(RefreshingCatalog):
    """Wraps a catalog; hides every tool whose current definition is not approved.

    ``trusted`` names more servers whose tools skip review; it is asked each time, since servers
    added at run time come and go.
    """

    def __init__(
        self,
        inner: ToolCatalog,
        pins: ToolPins,
        settings: PinningSettings,
        trusted: Callable[[], Set[str]] = frozenset,
    ) -> None:
        super().__init__(inner, settings.refresh_seconds, "tool-pins")
        self._pins = pins
        self._trusted_servers = frozenset(settings.trusted_servers)
        self._more_trusted = trusted
        self._approved: frozenset[tuple[str, str]] = frozenset()

    def trusted(self, server: str) -> bool:
        return server in self._trusted_servers or server in self._more_trusted()

    async def refresh(self) -> None:
        """Pins definitions not seen before as pending review, and re-reads the approvals (which
        any replica may have decided)."""
        known = await self._pins.known()
        unseen = [
            tool
            for tool in self._inner.all_tools()
            if not self.trusted(tool.server) and (tool.name, tool.definition_hash) not in known
        ]
        if unseen:
            log.warning("tools_held_for_review", tools=[tool.name for tool in unseen])
            await self._pins.hold(unseen)
        self._approved = frozenset(await self._pins.approved())

    def offered(self, tool: StandardizedTool) -> bool:
        return self.trusted(tool.server) or (tool.name, tool.definition_hash) in self._approved

    def get_tools_for_llm(
        self, roles: Iterable[str], bundle: str | None = None
    ) -> list[StandardizedTool]:
        return [t for t in self._inner.get_tools_for_llm(roles, bundle) if self.offered(t)]

    def get(self, name: str) -> StandardizedTool | None:
        tool = self._inner.get(name)
        return tool if tool is not None and self.offered(tool) else None

    def all_tools(self) -> list[StandardizedTool]:
        return self._inner.all_tools()

    async def call_tool(
        self, name: str, arguments: dict[str, Any], timeout: float | None = None
    ) -> ToolResult:
        tool = self._inner.get(name)
        if tool is not None and not self.offered(tool):
            return error_result(f"the tool `{name}` is held for review")
        return await self._inner.call_tool(name, arguments, timeout)
