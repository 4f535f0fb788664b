"""Turning provider output into canonical form: arguments and finish reasons (the fold of a
reply's events is ``llm_service.streaming``)."""

from __future__ import annotations

import json
from typing import Any

from llm_service.types import FinishReason, ToolCall


def parse_arguments(raw: str | dict[str, Any] | None) -> tuple[dict[str, Any], str | None]:
    """Return (arguments, raw text if it was not a JSON object).

    Empty means ``{}``; a JSON string that itself holds a JSON object (double encoding, common in
    small models) is unwrapped once.
    """
    if raw is None:
        return {}, None
    if isinstance(raw, dict):
        return raw, None
    text = raw.strip()
    if not text:
        return {}, None
    try:
        value: Any = json.loads(text)
        if isinstance(value, str):
            value = json.loads(value)
    except ValueError:
        return {}, raw
    if isinstance(value, dict):
        return value, None
    return {}, raw


def tool_call(call_id: str, name: str, raw: str | dict[str, Any] | None) -> ToolCall:
    arguments, unparsed = parse_arguments(raw)
    return ToolCall(id=call_id, name=name, arguments=arguments, raw_arguments=unparsed)


def arguments_json(call: ToolCall) -> str:
    """The arguments as the JSON text an OpenAI-style API carries."""
    if call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False, separators=(",", ":"))


def finish_reason(reason: FinishReason, has_tool_calls: bool) -> FinishReason:
    """Calls were made unless the answer was cut off: providers disagree, callers should not."""
    if has_tool_calls and reason != "length":
        return "tool_calls"
    return reason
