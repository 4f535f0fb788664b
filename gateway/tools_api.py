"""``GET /v1/tools``: the standardized tools the calling key's roles may use."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from fastapi import APIRouter, Query
from starlette.responses import Response

from gateway.auth import CurrentPrincipal, ServicesDep
from gateway.services import Services
from llm_service.errors import InvalidRequest
from mcp_client.types import StandardizedTool

_BODY = "GET /v1/tools"
router = APIRouter(prefix="/v1", tags=["tools"])


@router.get("/tools")
async def list_tools(
    principal: CurrentPrincipal,
    services: ServicesDep,
    bundle: str | None = Query(None, description="narrow the list to one named tool bundle"),
) -> Response:
    check_bundle(services, bundle)
    # Serialized once per offer: the offer is replaced whenever what it lists may have changed.
    body = services.tools.offer(principal.roles, bundle).derived(_BODY, _body)
    return Response(body, media_type="application/json")


def check_bundle(services: Services, bundle: str | None) -> None:
    """A 400 naming ``bundle`` for a bundle the config file does not define."""
    if bundle is not None and bundle not in services.tools.bundle_names():
        raise InvalidRequest(f"There is no tool bundle named `{bundle}`.", param="bundle")


def _body(tools: Sequence[StandardizedTool]) -> bytes:
    return orjson.dumps({"object": "list", "data": [_tool_json(tool) for tool in tools]})


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
