"""Schema compatibility: for each tool and configured provider, whether the provider takes the
tool as is, only after the gateway converts it, or will reject it anyway.

It runs the same conversions the adapters apply on the wire (``adapters.schemas``,
``adapters.naming``), so the report cannot drift from what is actually sent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from fastapi import APIRouter
from starlette.responses import Response

from adapters.naming import wire_tool_name
from adapters.schemas import anthropic_input_schema, ollama_parameters, openai_parameters
from gateway.auth import AdminPrincipal, ServicesDep
from gateway.responses import json_response
from mcp_client.types import StandardizedTool

router = APIRouter(prefix="/v1/admin", tags=["admin"])

Converter = Callable[[dict[str, Any]], dict[str, Any]]
# The parameter conversion each provider's adapter applies; `mock` sends nothing anywhere.
CONVERTERS: dict[str, Converter] = {
    "openai": openai_parameters,
    "litellm": openai_parameters,
    "anthropic": anthropic_input_schema,
    "ollama": ollama_parameters,
}


@dataclass(frozen=True, slots=True)
class Verdict:
    provider: str
    outcome: Literal["as_is", "converted", "rejected"]
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"provider": self.provider, "outcome": self.outcome, "notes": self.notes}


def verdict(tool: StandardizedTool, provider: str, convert: Converter) -> Verdict:
    converted = convert(tool.parameters)
    if converted.get("type") != "object":
        note = f"the parameters' root is `{converted.get('type')}`, not an object"
        return Verdict(provider, "rejected", [note])
    notes: list[str] = []
    if wire_tool_name(tool.name) != tool.name:
        notes.append(f"name sent as `{wire_tool_name(tool.name)}` (length or characters)")
    if converted != tool.parameters:
        notes.append("parameters schema rewritten for this provider")
    return Verdict(provider, "converted" if notes else "as_is", notes)


def report(tools: list[StandardizedTool], providers: list[str]) -> list[dict[str, Any]]:
    chosen = [p for p in providers if p in CONVERTERS]
    return [
        {
            "tool": tool.name,
            "server": tool.server,
            "providers": [verdict(tool, p, CONVERTERS[p]).to_json() for p in chosen],
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
