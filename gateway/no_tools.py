"""A catalog with no tools, for a gateway configured without tool servers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mcp_client.types import StandardizedTool, ToolResult


class NoTools:
    def get_tools_for_llm(
        self, roles: Iterable[str], bundle: str | None = None
    ) -> list[StandardizedTool]:
        return []

    def get(self, name: str) -> StandardizedTool | None:
        return None

    async def call_tool(
        self, name: str, arguments: dict[str, Any], timeout: float | None = None
    ) -> ToolResult:
        return ToolResult(f"Tool `{name}` does not exist.", is_error=True)
