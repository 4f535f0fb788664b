"""The schema-compatibility report runs the adapters' own conversions."""

from __future__ import annotations

from typing import Any

from admin.api.compatibility import report
from mcp_client.types import StandardizedTool, definition_hash
from tests.support.tool_loop import LoopStack


def tool(name: str, parameters: dict[str, Any]) -> StandardizedTool:
    return StandardizedTool(
        name=name,
        description="",
        parameters=parameters,
        server="s",
        original_name=name,
        definition_hash=definition_hash(name, "", parameters),
    )


def outcomes(row: dict[str, Any]) -> dict[str, str]:
    return {v["provider"]: v["outcome"] for v in row["providers"]}


PROVIDERS = ["anthropic", "mock", "ollama", "openai"]


def test_a_plain_object_schema_is_taken_as_is_everywhere() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    [row] = report([tool("weather", schema)], PROVIDERS)
    assert outcomes(row) == {"anthropic": "as_is", "ollama": "as_is", "openai": "as_is"}


def test_a_root_union_is_folded_for_anthropic_and_rejected_by_openai() -> None:
    schema = {
        "anyOf": [
            {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
            {"type": "object", "properties": {"email": {"type": "string"}}},
        ]
    }
    [row] = report([tool("lookup", schema)], ["anthropic", "openai"])
    assert outcomes(row) == {"anthropic": "converted", "openai": "rejected"}


def test_defaults_and_long_names_are_converted() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "default": 3}}}
    [row] = report([tool("x" * 80, schema)], ["openai"])
    [openai] = row["providers"]
    assert openai["outcome"] == "converted"
    assert any("name sent as" in note for note in openai["notes"])
    assert "parameters schema rewritten for this provider" in openai["notes"]


def test_the_endpoint_is_for_admins(admin_stack: LoopStack) -> None:
    with admin_stack.client(admin_stack.admin_key) as admin:
        listed = admin.get("/v1/admin/tools/compatibility").json()
    assert listed["providers"] == ["mock"]
    assert {row["tool"] for row in listed["data"]} >= {"get_time", "transfer_money"}
    with admin_stack.client(admin_stack.user_key) as user:
        assert user.get("/v1/admin/tools/compatibility").status_code == 403
