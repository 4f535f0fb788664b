"""MCP servers with their status, and the tool catalog with each tool's effective policy."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.responses import Response

from chat_service.pinned_catalog import PinnedCatalog
from gateway.auth import AdminPrincipal, ServicesDep
from gateway.responses import json_response
from mcp_client.types import StandardizedTool, ToolCatalog

router = APIRouter(prefix="/v1/admin", tags=["admin"])


def servers_json(catalog: ToolCatalog) -> list[dict[str, Any]]:
    return [
        {"object": "mcp_server", "name": name, **health.as_dict()}
        for name, health in sorted(catalog.status().items())
    ]


def tool_policy_json(tool: StandardizedTool, held: bool) -> dict[str, Any]:
    return {
        "object": "tool",
        "name": tool.name,
        "server": tool.server,
        "original_name": tool.original_name,
        "description": tool.description,
        "parameters": tool.parameters,
        "category": tool.category,
        "definition_hash": tool.definition_hash,
        "policy": {
            "roles": sorted(tool.roles),
            "requires_approval": tool.requires_approval,
            "auto_approved": tool.auto_approved,
            "held_for_review": held,
        },
    }


def tools_json(catalog: ToolCatalog) -> list[dict[str, Any]]:
    tools = sorted(catalog.all_tools(), key=lambda tool: (tool.server, tool.name))
    pinned = catalog if isinstance(catalog, PinnedCatalog) else None
    return [
        tool_policy_json(tool, pinned is not None and not pinned.offered(tool)) for tool in tools
    ]


@router.get("/servers")
async def list_servers(principal: AdminPrincipal, services: ServicesDep) -> Response:
    return json_response({"object": "list", "data": servers_json(services.tools)})


@router.get("/tools")
async def list_tools(principal: AdminPrincipal, services: ServicesDep) -> Response:
    return json_response({"object": "list", "data": tools_json(services.tools)})
