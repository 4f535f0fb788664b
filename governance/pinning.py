"""Which tool definitions are held for review on this replica (the pins are in ``pins``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Iterable, Set

import structlog
from pydantic import BaseModel, ConfigDict, Field

from governance.pins import PinView, ToolPins
from mcp_client.types import StandardizedTool

log = structlog.get_logger("governance.pinning")


class PinningSettings(BaseModel):
    """The config file's `tool_pinning` section."""

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


# Told of each definition newly held for review (by the one replica that pinned it).
ReviewObserver = Callable[[PinView], Awaitable[None]]


class Pinning:
    """Holds every tool whose current definition is not approved, unless pinning is off or the
    tool's server is trusted.

    ``trusted`` names more servers whose tools skip review; it is asked each time, since servers
    added at run time come and go.
    """

    def __init__(
        self,
        pins: ToolPins,
        settings: PinningSettings,
        trusted: Callable[[], Set[str]] = frozenset,
        on_held: ReviewObserver | None = None,
    ) -> None:
        self.pins = pins
        self._on_held = on_held
        self.settings = settings
        self._trusted_servers = frozenset(settings.trusted_servers)
        self._more_trusted = trusted
        self._approved: frozenset[tuple[str, str]] = frozenset()
        self._generation = 0  # counts changes of the approvals read here

    @property
    def enabled(self) -> bool:
        return self.settings.enabled

    def trusted(self, server: str) -> bool:
        return server in self._trusted_servers or server in self._more_trusted()

    async def refresh(self, tools: Iterable[StandardizedTool]) -> None:
        """Pins definitions not seen before as pending review, and re-reads the approvals (which
        any replica may have decided). Does nothing when pinning is off."""
        if not self.enabled:
            return
        known = await self.pins.known()
        unseen = [
            tool
            for tool in tools
            if not self.trusted(tool.server) and (tool.name, tool.definition_hash) not in known
        ]
        if unseen:
            log.warning("tools_held_for_review", tools=[tool.name for tool in unseen])
            for pin in await self.pins.hold(unseen):
                if self._on_held is not None:
                    await self._on_held(pin)
        approved = frozenset(await self.pins.approved())
        if approved != self._approved:
            self._approved = approved
            self._generation += 1

    def version(self) -> Hashable:
        """Changes whenever ``held`` may answer differently for some tool definition."""
        if not self.enabled:
            return None
        return (self._generation, frozenset(self._more_trusted()))

    def held(self, tool: StandardizedTool) -> bool:
        if not self.enabled or self.trusted(tool.server):
            return False
        return (tool.name, tool.definition_hash) not in self._approved
