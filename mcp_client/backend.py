"""What the catalog needs from one tool server, whatever its transport."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from mcp_client.types import ToolResult


class BackendUnavailable(Exception):
    """The server cannot be reached or its connection died; the supervisor reconnects."""


@dataclass(frozen=True, slots=True)
class RemoteTool:
    """A tool as its server describes it, before the catalog names and filters it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] = field(default_factory=dict)
    category: str | None = None


class ToolBackend(Protocol):
    async def connect(self) -> None:
        """Open the connection; raises BackendUnavailable when the server cannot be reached."""
        ...

    async def list_tools(self) -> list[RemoteTool]:
        """The server's current tools; raises BackendUnavailable when the connection is gone."""
        ...

    async def call(self, name: str, arguments: dict[str, Any], timeout: float) -> ToolResult:
        """Run one call. Failures are error results; a dead connection also marks ``broken``."""
        ...

    @property
    def broken(self) -> bool:
        """The connection died since ``connect``; the supervisor should reconnect."""
        ...

    async def aclose(self) -> None: ...


OnToolsChanged = Callable[[], None]
BackendFactory = Callable[[OnToolsChanged], ToolBackend]
