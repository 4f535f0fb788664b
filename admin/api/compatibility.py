"""Schema compatibility: for each tool and configured provider, whether the provider takes the
tool as is, only after the gateway converts it, or will reject it anyway.

It runs the same conversions the adapters apply on the wire (``gateway.providers``, from
``adapters.schemas`` and ``adapters.naming``), so the report cannot drift from what is sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from fastapi import APIRouter
from starlette.responses import Response

from gateway.auth import AdminPrincipal, ServicesDep
from gateway.providers import TOOL_SCHEMA_CONVERTERS, ToolSchemaConverter, tool_name_on_wire
from gateway.responses import json_response
from mcp_client.types import StandardizedTool

router = APIRouter(prefix="/v1/admin", tags=["admin"])


@dataclass(frozen=True, slots=True)
class Verdict:
    provider: str
    outcome: Literal["as_is", "converted", "rejected"]
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"provider": self.provider, "outcome": self.outcome, "notes": self.notes}


def verdict(tool: StandardizedTool, provider: str, convert: ToolSchemaConverter) -> Verdict:
    converted = convert(tool.parameters)
    if converted.get("type") != "object":
        note = f"the parameters' root is `{converted.get('type')}`, not an object"
        return Verdict(provider, "rejected", [note])
    notes: list[str] = []
    if tool_name_on_wire(tool.name) != tool.name:
        notes.append(f"name sent as `{tool_name_on_wire(tool.name)}` (length or characters)")
    if converted != tool.parameters:
        notes.append("parameters schema rewritten for this provider")
    return Verdict(provider, "converted" if notes else "as_is", notes)


def report(tools: list[StandardizedTool], providers: list[str]) -> list[dict[str, Any]]:
    chosen = [p for p in providers if p in TOOL_SCHEMA_CONVERTERS]
    return [
        {
            "tool": tool.name,
            "server": tool.server,
            "providers": [verdict(tool, p, TOOL_SCHEMA_CONVERTERS[p]).to_json() for p in chosen],
        }
        for tool in sorted(tools, key=lambda tool: tool.name)
    ]


def configured_providers(services: ServicesDep) -> list[str]:
    return sorted({model.provider for model in services.settings.models})


@router.get("/tools/compatibility")
async def compatibility(principal: AdminPrincipal, services: ServicesDep) -> Response:
    providers = configured_providers(services)
    data = report(services.tools.all_tools(), providers)
    return json_response({"object": "list", "providers": providers, "data": data})
