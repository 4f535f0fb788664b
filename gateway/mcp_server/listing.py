"""The tools a key may use, as MCP tools: exactly what ``GET /v1/tools`` lists for it."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from pydantic import ValidationError

from governance import ToolGovernance
from mcp_client.types import StandardizedTool

# Where the gateway's own facts about a tool go in `_meta` (reverse-DNS, as the spec asks).
META_KEY = "llm-gateway/tool"


def mcp_tools(tools: ToolGovernance, roles: frozenset[str], bundle: str | None) -> list[types.Tool]:
    """The same call ``/v1/tools`` makes, so the two lists cannot drift apart."""
    return [mcp_tool(tool) for tool in tools.offer(roles, bundle).tools]


def mcp_tool(tool: StandardizedTool) -> types.Tool:
    """No output schema: a call's result comes back as the text the tool loop stores (what a
    model would read), so promising structured content would break strict clients."""
    facts = {
        "server": tool.server,
        "category": tool.category,
        "requires_approval": tool.requires_approval and not tool.auto_approved,
        "definition_hash": tool.definition_hash,
    }
    return types.Tool(
        name=tool.name,
        description=tool.description,
        input_schema=_object_schema(tool.parameters),
        annotations=_annotations(tool.annotations),
        _meta={META_KEY: facts},
    )


def _object_schema(schema: dict[str, Any]) -> dict[str, Any]:
    # MCP requires an object schema at the root; a server that gave none takes no arguments.
    return schema if "type" in schema else {"type": "object", **schema}


def _annotations(hints: dict[str, Any]) -> types.ToolAnnotations | None:
    if not hints:
        return None
    try:
        return types.ToolAnnotations.model_validate(hints)
    except ValidationError:
        return None  # a server's malformed hints are dropped, not passed on
