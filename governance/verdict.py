"""Whether a principal may run a tool call now, and if not why: the policy decision.

The decision is made again at execution time, whatever the model was offered.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from jsonschema import SchemaError
from jsonschema.validators import validator_for

from llm_service.types import ToolCall
from mcp_client.types import StandardizedTool


class Denial(StrEnum):
    """Why a call may not run, as a type (the reason text is for the model and the audit)."""

    UNKNOWN_TOOL = "unknown_tool"
    HELD_FOR_REVIEW = "held_for_review"
    DISABLED = "disabled"
    ROLE_NOT_ALLOWED = "role_not_allowed"
    ARGUMENTS_NOT_AN_OBJECT = "arguments_not_an_object"
    INVALID_SCHEMA = "invalid_schema"
    INVALID_ARGUMENTS = "invalid_arguments"


@dataclass(frozen=True, slots=True)
class Verdict:
    """The decision on one call: allowed when ``denial`` is None.

    ``tool`` is the tool as policy has it; None when no tool of that name exists.
    """

    tool: StandardizedTool | None
    denial: Denial | None = None
    reason: str | None = None

    @property
    def allowed(self) -> bool:
        return self.denial is None

    @property
    def requires_approval(self) -> bool:
        """An allowed call that must wait for a human's approval before it runs."""
        tool = self.tool
        if not self.allowed or tool is None:
            return False
        return tool.requires_approval and not tool.auto_approved


def judge(
    tool: StandardizedTool | None, held: bool, call: ToolCall, roles: Iterable[str]
) -> Verdict:
    """``tool``: the effective tool named by the call (None: no such tool); ``held``: its
    definition awaits review."""
    if tool is None or held:
        # A held tool is denied like an unknown one: the model learns nothing of it.
        denial = Denial.UNKNOWN_TOOL if tool is None else Denial.HELD_FOR_REVIEW
        return Verdict(tool, denial, f"Tool `{call.name}` does not exist.")
    if not tool.enabled:
        reason = f"Tool `{call.name}` is disabled by an administrator."
        return Verdict(tool, Denial.DISABLED, reason)
    if tool.roles.isdisjoint(roles):
        reason = f"Tool `{call.name}` is not allowed for this caller's roles."
        return Verdict(tool, Denial.ROLE_NOT_ALLOWED, reason)
    return _arguments_verdict(tool, call)


def _arguments_verdict(tool: StandardizedTool, call: ToolCall) -> Verdict:
    if call.raw_arguments is not None:
        reason = f"Arguments for `{call.name}` are not a JSON object."
        return Verdict(tool, Denial.ARGUMENTS_NOT_AN_OBJECT, reason)
    try:
        validator = validator_for(tool.parameters)(tool.parameters)
        error = next(iter(validator.iter_errors(call.arguments)), None)
    except SchemaError:
        return Verdict(tool, Denial.INVALID_SCHEMA, f"Tool `{call.name}` has an invalid schema.")
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "arguments"
        reason = f"Invalid arguments for `{call.name}` at {where}: {error.message}"
        return Verdict(tool, Denial.INVALID_ARGUMENTS, reason)
    return Verdict(tool)
