"""``GET /v1/tools``: the standardized tools the calling key's roles may use."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query
from starlette.responses import Response

from gateway.auth import CurrentPrincipal, ServicesDep
from gateway.responses import json_response
from gateway.services import Services
from llm_service.errors import InvalidRequest
from mcp_client.types import StandardizedTool

router = APIRouter(prefix="/v1", tags=["tools"])


@router.get("/tools")
async def list_tools(
    principal: CurrentPrincipal,
    services: ServicesDep,
    bundle: str | None = Query(None, description="narrow the list to one named tool bundle"),
) -> Response:
    check_bundle(services, bundle)
    tools = services.tools.visible_tools(principal.roles, bundle)
    return json_response({"object": "list", "data": [_tool_json(tool) for tool in tools]})


def check_bundle(services: Services, bundle: str | None) -> None:
    """A 400 naming ``bundle`` for a bundle the config file does not define."""
    if bundle is not None and bundle not in services.tools.bundle_names():
        raise InvalidRequest(f"There is no tool bundle named `{bundle}`.", param="bundle")


def _tool_json(tool: StandardizedTool) -> dict[str, Any]:
    return {
        "object": "tool",
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
        "server": tool.server,
        "annotations": tool.annotations,
        "category": tool.category,
        "requires_approval": tool.requires_approval,
        "auto_approved": tool.auto_approved,
        "definition_hash": tool.definition_hash,
    }
