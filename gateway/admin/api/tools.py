"""MCP servers with their status, and the tool catalog with each tool's effective policy."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from chat_service.pinned_catalog import PinnedCatalog
from chat_service.policy_catalog import PolicyCatalog
from gateway.admin.api.keys import validate_roles
from gateway.auth import AdminPrincipal, ServicesDep
from gateway.responses import json_response
from gateway.services import Services
from llm_service.errors import GatewayError
from mcp_client.types import StandardizedTool, ToolCatalog

router = APIRouter(prefix="/v1/admin", tags=["admin"])


class ToolNotFound(GatewayError):
    status_code = 404
    error_type = "invalid_request_error"
    code = "tool_not_found"


class PolicyChange(BaseModel):
    """Fields left out are kept; a field set to null goes back to the config file's value."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool | None = None
    roles: list[str] | None = Field(None, max_length=20)
    requires_approval: bool | None = None


def servers_json(catalog: ToolCatalog) -> list[dict[str, Any]]:
    return [
        {"object": "mcp_server", "name": name, **health.as_dict()}
        for name, health in sorted(catalog.status().items())
    ]


def tool_policy_json(
    tool: StandardizedTool, held: bool, policies: PolicyCatalog | None = None
) -> dict[str, Any]:
    stored = policies.stored(tool.name) if policies is not None else None
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
            "enabled": tool.enabled,
            "roles": sorted(tool.roles),
            "requires_approval": tool.requires_approval,
            "auto_approved": tool.auto_approved,
            "held_for_review": held,
            "admin_override": stored.to_json() if stored is not None else None,
        },
    }


def tools_json(catalog: ToolCatalog, policies: PolicyCatalog | None = None) -> list[dict[str, Any]]:
    tools = sorted(catalog.all_tools(), key=lambda tool: (tool.server, tool.name))
    pinned = catalog if isinstance(catalog, PinnedCatalog) else None
    return [
        tool_policy_json(tool, pinned is not None and not pinned.offered(tool), policies)
        for tool in tools
    ]


@router.get("/servers")
async def list_servers(principal: AdminPrincipal, services: ServicesDep) -> Response:
    return json_response({"object": "list", "data": servers_json(services.tools)})


@router.get("/tools")
async def list_tools(principal: AdminPrincipal, services: ServicesDep) -> Response:
    return json_response({"object": "list", "data": tools_json(services.tools, services.policies)})


@router.put("/tools/{name}/policy")
async def change_tool_policy(
    name: str, change: PolicyChange, principal: AdminPrincipal, services: ServicesDep
) -> Response:
    """Stored, audited, and applied on this replica at once (others within their refresh)."""
    changes = change.model_dump(include=change.model_fields_set)
    return json_response(await change_policy(services, name, changes, principal.key_id))


async def change_policy(
    services: Services, name: str, changes: dict[str, Any], actor_key_id: int
) -> dict[str, Any]:
    """The one way to change a tool's policy (the API and the web UI): checks the tool and the
    roles, stores and audits the change; returns the tool as ``GET /v1/admin/tools`` lists it."""
    _find(services.tools, name)
    if changes.get("roles") is not None:
        changes = {**changes, "roles": validate_roles(changes["roles"])}
    await services.policies.change(name, changes, actor_key_id)
    tool = _find(services.tools, name)
    pinned = services.tools if isinstance(services.tools, PinnedCatalog) else None
    held = pinned is not None and not pinned.offered(tool)
    return tool_policy_json(tool, held, services.policies)


def _find(catalog: ToolCatalog, name: str) -> StandardizedTool:
    # all_tools, not get: a tool held for review can still have its policy set.
    for tool in catalog.all_tools():
        if tool.name == name:
            return tool
    raise ToolNotFound(f"Tool `{name}` does not exist.", param="name")
