"""Hermes / Qwen 2.5 and 3: ``<tool_call>{"name": .., "arguments": ..}</tool_call>`` blocks."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from adapters.text.base import (
    THINK_TAGS,
    Block,
    Call,
    Parsed,
    call_from_object,
    choice_instruction,
    closing_pending,
    tools_json,
)
from adapters.text.jsonscan import JsonReader, Verdict, dumps, skip_ws
from llm_service.types import ToolCall, ToolChoice, ToolResultMessage, ToolSpec

OPEN = "<tool_call>"
CLOSE = "</tool_call>"


@dataclass(frozen=True)
class HermesFormat:
    name: str = "hermes"
    markers: tuple[str, ...] = (OPEN,)
    openers: tuple[str, ...] = ()
    think_tags: tuple[str, str] = THINK_TAGS
    results_as_tool_role: bool = False

    def render_tools(self, tools: Sequence[ToolSpec], choice: ToolChoice | None) -> str:
        signatures = "\n".join(dumps(t) for t in tools_json(tools))
        return (
            "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
            "You are provided with function signatures within <tools></tools> XML tags:\n"
            f"<tools>\n{signatures}\n</tools>\n\n"
            "For each function call, return a json object with function name and arguments "
            "within <tool_call></tool_call> XML tags:\n"
            '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
            + choice_instruction(choice)
        )

    def render_calls(self, calls: Sequence[ToolCall]) -> str:
        return "\n".join(
            f"{OPEN}\n{dumps({'name': c.name, 'arguments': c.arguments})}\n{CLOSE}" for c in calls
        )

    def render_result(self, result: ToolResultMessage, name: str) -> str:
        return f"<tool_response>\n{result.content}\n</tool_response>"

    def parse_block(
        self,
        text: str,
        start: int,
        marker: str,
        *,
        final: bool,
        tools: Collection[str],
        reader: JsonReader,
    ) -> Block:
        read = reader.read_value(text, skip_ws(text, start + len(marker)))
        if isinstance(read, Verdict):
            return read
        value, end = read
        call = call_from_object(value, tools)
        if call is None:
            return Verdict.INVALID
        after = skip_ws(text, end)
        if text.startswith(CLOSE, after):
            return Parsed((call,), after + len(CLOSE))
        if closing_pending(text, end, CLOSE):
            # The closing tag is often missing at the very end of the output.
            return Parsed((call,), len(text)) if final else Verdict.INCOMPLETE
        return Verdict.INVALID

    def parse_leading(self, text: str, tools: Collection[str]) -> tuple[Call, ...] | None:
        return None
