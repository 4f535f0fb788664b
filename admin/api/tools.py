"""MCP servers with their status, and the tool catalog with each tool's effective policy."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from admin.api.keys import validate_roles
from gateway.auth import AdminPrincipal, ServicesDep
from gateway.responses import json_response
from gateway.services import Services
from governance import ApprovalRules, ToolGovernance
from governance.errors import ToolNotFound
from guardrails import ToolGuardrails
from llm_service.errors import InvalidRequest
from mcp_client.types import StandardizedTool
from tool_servers import ToolServers

router = APIRouter(prefix="/v1/admin", tags=["admin"])


class PolicyChange(BaseModel):
    """Fields left out are kept; a field set to null goes back to the config file's value."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool | None = None
    roles: list[str] | None = Field(None, max_length=20)
    requires_approval: bool | None = None
    approval_rules: ApprovalRules | None = Field(
        None, description="auto-approve conditions, thresholds, approvers (null: the config's)"
    )
    guardrails: ToolGuardrails | None = Field(
        None,
        description="guardrail actions per detector and direction, over every config rule, "
        'e.g. {"secrets": {"results": "allow"}} (null: the config\'s alone)',
    )


def servers_json(servers: ToolServers) -> list[dict[str, Any]]:
    return [
        {"object": "mcp_server", "name": name, **health.as_dict()}
        for name, health in sorted(servers.status().items())
    ]


def tool_policy_json(tools: ToolGovernance, tool: StandardizedTool) -> dict[str, Any]:
    stored = tools.admin_policy(tool.name)
    rules = tools.approval_rules(tool)
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
            "approval_rules": rules.model_dump() if rules is not None else None,
            "held_for_review": tools.held_for_review(tool),
            "guardrails": tools.guardrail_actions(tool),
            "admin_override": stored.to_json() if stored is not None else None,
        },
    }


def tools_json(tools: ToolGovernance) -> list[dict[str, Any]]:
    listed = sorted(tools.all_tools(), key=lambda tool: (tool.server, tool.name))
    return [tool_policy_json(tools, tool) for tool in listed]


@router.get("/servers")
async def list_servers(principal: AdminPrincipal, services: ServicesDep) -> Response:
    return json_response({"object": "list", "data": servers_json(services.tool_servers)})


@router.get("/tools")
async def list_tools(principal: AdminPrincipal, services: ServicesDep) -> Response:
    return json_response({"object": "list", "data": tools_json(services.tools)})


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
    tool = _find(services.tools, name)
    if changes.get("approval_rules") is not None:
        _check_rule_arguments(tool, ApprovalRules.model_validate(changes["approval_rules"]))
    if changes.get("roles") is not None:
        changes = {**changes, "roles": validate_roles(changes["roles"])}
    if await services.tools.change_policy(name, changes, actor_key_id) is None:
        raise ToolNotFound(f"Tool `{name}` does not exist.", param="name")  # it just went away
    return tool_policy_json(services.tools, _find(services.tools, name))


def _check_rule_arguments(tool: StandardizedTool, rules: ApprovalRules) -> None:
    """A rule on an argument the tool does not declare would never apply: say so now."""
    properties = tool.parameters.get("properties")
    if not isinstance(properties, dict):
        return  # the schema declares no properties: any argument may come
    for argument in sorted(rules.arguments() - set(properties)):
        raise InvalidRequest(
            f"Tool `{tool.name}` has no argument `{argument}` (its schema declares "
            f"{', '.join(sorted(properties)) or 'none'}).",
            param="approval_rules",
        )


def _find(tools: ToolGovernance, name: str) -> StandardizedTool:
    # A tool held for review can have its policy set too.
    tool = tools.tool(name)
    if tool is None:
        raise ToolNotFound(f"Tool `{name}` does not exist.", param="name")
    return tool
