"""In-process Python tools (seed 001): a handler, a schema, a category; served like any server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from mcp_client.backend import RemoteTool, ToolCall
from mcp_client.results import error_result
from mcp_client.types import ToolResult

ToolHandler = Callable[[dict[str, Any]], Awaitable[ToolResult | str | dict[str, Any]]]
log = structlog.get_logger("mcp_client.local_tools")


@dataclass(frozen=True, slots=True)
class LocalTool:
    name: str
    description: str
    parameters: dict[str, Any]
    handler: ToolHandler
    category: str | None = None


class LocalToolBackend:
    """Runs handlers in this process; a handler's exception becomes an error result."""

    def __init__(self, tools: Sequence[LocalTool]) -> None:
        self._tools = {tool.name: tool for tool in tools}

    @property
    def broken(self) -> bool:
        return False

    async def connect(self) -> None:
        return None

    async def list_tools(self) -> list[RemoteTool]:
        return [
            RemoteTool(t.name, t.description, t.parameters, category=t.category)
            for t in self._tools.values()
        ]

    async def ping(self) -> None:
        return None

    async def call(self, call: ToolCall) -> ToolResult:
        name = call.name
        tool = self._tools.get(name)
        if tool is None:
            return error_result(f"unknown tool `{name}`")
        try:
            async with asyncio.timeout_at(call.deadline):
                value = await tool.handler(call.arguments)
        except TimeoutError:
            return call.timed_out()
        except Exception as exc:  # a handler's bug must not end the chat that called it
            log.warning("local_tool_failed", tool=name, error=type(exc).__name__)
            return error_result(f"the tool failed: {type(exc).__name__}: {exc}")
        if isinstance(value, ToolResult):
            return value
        if isinstance(value, str):
            return ToolResult(content=value)
        return ToolResult(
            content=json.dumps(value, ensure_ascii=False, default=str), structured=value
        )

    async def aclose(self) -> None:
        return None
