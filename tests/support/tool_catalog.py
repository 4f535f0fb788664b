"""A small in-process catalog of Python tools that counts its calls.

Stands in for the MCP client's catalog where a test is about the loop, not the transport.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from mcp_client.hooks import NO_HOOKS, CallHooks
from mcp_client.types import DEFINITION_CHANGED, StandardizedTool, ToolResult, definition_hash

Handler = Callable[[dict[str, Any]], Awaitable[str]]


@dataclass
class CountingCatalog:
    tools: dict[str, tuple[StandardizedTool, Handler]] = field(default_factory=dict)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    called: asyncio.Event | None = None
    # Names whose lookup fails, as a catalog that cannot answer would.
    unreachable: set[str] = field(default_factory=set)

    def add(
        self,
        name: str,
        handler: Handler,
        *,
        parameters: dict[str, Any] | None = None,
        roles: Iterable[str] = ("user",),
        requires_approval: bool = False,
        description: str = "",
        annotations: dict[str, Any] | None = None,
    ) -> None:
        schema = parameters or {"type": "object", "properties": {}}
        tool = StandardizedTool(
            name=name,
            description=description or f"the {name} tool",
            parameters=schema,
            server="local",
            original_name=name,
            definition_hash=definition_hash(name, description, schema),
            roles=frozenset(roles),
            requires_approval=requires_approval,
            annotations=annotations or {},
        )
        self.tools[name] = (tool, handler)

    def change_definition(self, name: str, description: str) -> None:
        tool, handler = self.tools[name]
        new_hash = definition_hash(name, description, tool.parameters)
        self.tools[name] = (
            replace(tool, description=description, definition_hash=new_hash),
            handler,
        )

    async def start(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    def status(self) -> dict[str, Any]:
        return {}

    def bundle_names(self) -> list[str]:
        return []

    def get(self, name: str) -> StandardizedTool | None:
        if name in self.unreachable:
            raise ConnectionError(f"the catalog cannot look up {name}")
        entry = self.tools.get(name)
        return entry[0] if entry else None

    def all_tools(self) -> list[StandardizedTool]:
        return [tool for tool, _ in self.tools.values()]

    async def run(
        self,
        tool: StandardizedTool,
        arguments: dict[str, Any],
        timeout: float | None = None,
        *,
        hooks: CallHooks = NO_HOOKS,
    ) -> ToolResult:
        listed, handler = self.tools[tool.name]
        if listed.definition_hash != tool.definition_hash:
            return ToolResult("changed", is_error=True, refused=DEFINITION_CHANGED)
        self.calls.append((tool.name, arguments))
        try:
            return ToolResult(await handler(arguments))
        except ValueError as exc:
            return ToolResult(str(exc), is_error=True)


def constant(text: str) -> Handler:
    async def handler(arguments: dict[str, Any]) -> str:
        return text

    return handler
