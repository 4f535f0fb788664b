"""What the catalog needs from one tool server, whatever its transport."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from mcp_client.hooks import NO_HOOKS, CallHooks
from mcp_client.types import ToolResult

TaskSupport = Literal["forbidden", "optional", "required"]


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
    execution: dict[str, Any] | None = None  # MCP `execution`, e.g. {"taskSupport": "required"}


def task_support(execution: dict[str, Any] | None) -> TaskSupport:
    """A tool's ``execution.taskSupport``; absent or unreadable means forbidden, per the spec."""
    value = (execution or {}).get("taskSupport")
    return value if value in ("optional", "required") else "forbidden"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call as the catalog hands it to a backend."""

    name: str  # the tool's name on its server
    arguments: dict[str, Any]
    deadline: float  # event-loop time by which the call must have ended
    limit: float  # the configured timeout in seconds, for messages
    execution: dict[str, Any] | None = None
    hooks: CallHooks = NO_HOOKS

    def timed_out(self) -> ToolResult:
        return ToolResult(
            content=f"the tool did not answer within {self.limit:g} s and was cancelled",
            is_error=True,
            timed_out=True,
        )


class ToolBackend(Protocol):
    async def connect(self) -> None:
        """Open the connection; raises BackendUnavailable when the server cannot be reached."""
        ...

    async def list_tools(self) -> list[RemoteTool]:
        """The server's current tools; raises BackendUnavailable when the connection is gone."""
        ...

    async def call(self, call: ToolCall) -> ToolResult:
        """Run one call. Failures are error results; a dead connection also marks ``broken``."""
        ...

    async def ping(self) -> None:
        """Check the server still answers; raises BackendUnavailable when it does not."""
        ...

    @property
    def broken(self) -> bool:
        """The connection died since ``connect``; the supervisor should reconnect."""
        ...

    async def aclose(self) -> None: ...


OnToolsChanged = Callable[[], None]
BackendFactory = Callable[[OnToolsChanged], ToolBackend]
