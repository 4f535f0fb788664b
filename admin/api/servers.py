"""MCP servers admins add, change and remove at run time (see ``tool_servers.runtime``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.responses import Response

from gateway.auth import AdminPrincipal, ServicesDep
from gateway.responses import json_response
from llm_service.errors import InvalidRequest
from mcp_client.config import MCPServerConfig
from tool_servers import ToolServers

router = APIRouter(prefix="/v1/admin", tags=["admin"])


@router.post("/servers")
async def add_server(
    config: MCPServerConfig, principal: AdminPrincipal, services: ServicesDep
) -> Response:
    await services.tool_servers.put(config, principal.key_id, create=True)
    return json_response(server_json(services.tool_servers, config), status=201)


@router.put("/servers/{name}")
async def change_server(
    name: str, config: MCPServerConfig, principal: AdminPrincipal, services: ServicesDep
) -> Response:
    if config.name != name:
        raise InvalidRequest("The body's `name` must match the path.", param="name")
    await services.tool_servers.put(config, principal.key_id, create=False)
    return json_response(server_json(services.tool_servers, config))


@router.delete("/servers/{name}")
async def delete_server(name: str, principal: AdminPrincipal, services: ServicesDep) -> Response:
    await services.tool_servers.delete(name, principal.key_id)
    return json_response({"object": "mcp_server", "name": name, "deleted": True})


def server_json(servers: ToolServers, config: MCPServerConfig) -> dict[str, Any]:
    health = servers.status().get(config.name)
    return {
        "object": "mcp_server",
        "name": config.name,
        **(health.as_dict() if health is not None else {}),
        "config": config.model_dump(mode="json"),
    }
