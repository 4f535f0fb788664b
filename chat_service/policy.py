"""The policy check made again at execution time, whatever the model was offered."""

from __future__ import annotations

from collections.abc import Iterable

from jsonschema import SchemaError
from jsonschema.validators import validator_for

from llm_service.types import ToolCall
from mcp_client.types import StandardizedTool


def denial_reason(
    tool: StandardizedTool | None, call: ToolCall, roles: Iterable[str]
) -> str | None:
    """Why this call must not run, or None when policy allows it."""
    if tool is None:
        return f"Tool `{call.name}` does not exist."
    if not tool.enabled:
        return f"Tool `{call.name}` is disabled by an administrator."
    if tool.roles.isdisjoint(roles):
        return f"Tool `{call.name}` is not allowed for this caller's roles."
    return _argument_problem(tool, call)


def _argument_problem(tool: StandardizedTool, call: ToolCall) -> str | None:
    if call.raw_arguments is not None:
        return f"Arguments for `{call.name}` are not a JSON object."
    try:
        validator = validator_for(tool.parameters)(tool.parameters)
        error = next(iter(validator.iter_errors(call.arguments)), None)
    except SchemaError:
        return f"Tool `{call.name}` has an invalid schema."
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "arguments"
        return f"Invalid arguments for `{call.name}` at {where}: {error.message}"
    return None
