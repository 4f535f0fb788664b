"""The client side of the official MCP conformance suite (``@modelcontextprotocol/conformance``).

The suite's client mode starts a scenario server and runs our command with the server's URL as the
last argument and the scenario's name in ``MCP_CONFORMANCE_SCENARIO`` (the CLI reads both and
calls ``run``). The gateway's own catalog connects exactly as ``serve`` builds it from config, lists
the tools and calls each with arguments made from its schema, playing the user where a scenario
asks for input: an elicitation is accepted with the requested schema's defaults.

Scenarios that need OAuth (``auth/*``) fail with a clear message: authorization is not built yet.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any, TextIO

from mcp_client.catalog import MCPToolCatalog
from mcp_client.config import CatalogSettings, MCPServerConfig
from mcp_client.hooks import CallHooks, InputAnswer, InputRequest
from mcp_client.types import StandardizedTool

SERVER = "conformance"
ROLE = "conformance"
_SAMPLE_VALUES: dict[str, Any] = {
    "string": "conformance",
    "integer": 1,
    "number": 1,
    "boolean": True,
    "array": [],
    "object": {},
}


def run(url: str, scenario: str, out: TextIO = sys.stdout) -> int:
    """Exit status for the suite: 0 when every step ran, 1 otherwise (the reason on stderr)."""
    if scenario.startswith("auth/"):
        print(f"{scenario}: OAuth for tool servers is not supported yet", file=sys.stderr)
        return 1
    return asyncio.run(_run(url, out))


async def _run(url: str, out: TextIO) -> int:
    config = MCPServerConfig(name=SERVER, transport="streamable_http", url=url, roles=[ROLE])
    settings = CatalogSettings(call_timeout=20)
    catalog = MCPToolCatalog.from_config([config], settings, environ={})
    await catalog.start()
    try:
        status = catalog.status()[SERVER]
        if status.state != "ready":
            print(f"could not connect: {status.reason}", file=sys.stderr)
            return 1
        hooks = CallHooks(on_input=accept_with_defaults)
        for tool in catalog.get_tools_for_llm([ROLE]):
            result = await catalog.call_tool(tool.name, sample_arguments(tool), hooks=hooks)
            print(json.dumps({"tool": tool.name, "result": result.content}), file=out)
    finally:
        await catalog.aclose()
    return 0


def sample_arguments(tool: StandardizedTool) -> dict[str, Any]:
    """A value of the right type for every required argument (its default where it has one)."""
    properties = tool.parameters.get("properties") or {}
    arguments: dict[str, Any] = {}
    for name in tool.parameters.get("required") or []:
        schema = properties.get(name) or {}
        if "default" in schema:
            arguments[name] = schema["default"]
        elif schema.get("enum"):
            arguments[name] = schema["enum"][0]
        else:
            arguments[name] = _SAMPLE_VALUES.get(str(schema.get("type")), "conformance")
    return arguments


async def accept_with_defaults(request: InputRequest) -> InputAnswer:
    """The user of the scenario: accepts, filling each field the schema gives a default for."""
    if request.mode != "form":
        return InputAnswer(action="decline")
    properties = request.requested_schema.get("properties") or {}
    content = {
        name: schema["default"]
        for name, schema in properties.items()
        if isinstance(schema, dict) and "default" in schema
    }
    return InputAnswer(action="accept", content=content)
