"""IBM Granite: ``<|tool_call|>[...]`` (3.x), ``<tool_call>[...]`` and ``<function_call> {...}``."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from adapters.text.base import (
    THINK_TAGS,
    Block,
    Call,
    Parsed,
    calls_from_json,
    choice_instruction,
    closing_pending,
    tools_json,
)
from adapters.text.jsonscan import JsonReader, Verdict, dumps, skip_ws
from adapters.text.whole import FENCE_OPENER, json_calls, whole_reply
from llm_service.types import ToolCall, ToolChoice, ToolResultMessage, ToolSpec

TOOL_CALL_TOKEN = "<|tool_call|>"  # noqa: S105 (a marker, not a secret)
TOOL_CALL_TAG = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
FUNCTION_CALL = "<function_call>"
END_OF_TEXT = "<|end_of_text|>"


@dataclass(frozen=True)
class GraniteFormat:
    name: str = "granite"
    markers: tuple[str, ...] = (TOOL_CALL_TOKEN, TOOL_CALL_TAG, FUNCTION_CALL)
    # A detokenizer that skips special tokens drops <|tool_call|>: the bare array remains.
    openers: tuple[str, ...] = ("[", "{", FENCE_OPENER)
    think_tags: tuple[str, str] = THINK_TAGS
    end_tokens: tuple[str, ...] = (END_OF_TEXT,)
    # Granite's templates render ``tool`` messages as ``tool_response`` turns themselves.
    results_as_tool_role: bool = True

    def render_tools(self, tools: Sequence[ToolSpec], choice: ToolChoice | None) -> str:
        return (
            "You are a helpful assistant with access to the following function calls. Your "
            "task is to produce a list of function calls necessary to generate response to the "
            "user utterance. Use the following function calls as required.\n"
            f"<|tool|>{dumps(tools_json(tools, wrapped=False))}<|end_of_tool|>\n"
            'To call functions, answer with <|tool_call|>[{"name": ..., "arguments": {...}}].'
            + choice_instruction(choice)
        )

    def render_calls(self, calls: Sequence[ToolCall]) -> str:
        return TOOL_CALL_TOKEN + dumps([{"name": c.name, "arguments": c.arguments} for c in calls])

    def render_result(self, result: ToolResultMessage, name: str) -> str:
        return result.text

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
        calls = calls_from_json(value, tools)
        if calls is None or (marker == FUNCTION_CALL and isinstance(value, list)):
            return Verdict.INVALID
        if marker != TOOL_CALL_TAG:
            return Parsed(calls, end)
        after = skip_ws(text, end)
        if text.startswith(TOOL_CALL_CLOSE, after):
            return Parsed(calls, after + len(TOOL_CALL_CLOSE))
        if not final and closing_pending(text, end, TOOL_CALL_CLOSE):
            return Verdict.INCOMPLETE
        return Parsed(calls, end)

    def parse_leading(self, text: str, tools: Collection[str]) -> tuple[Call, ...] | None:
        return whole_reply(text, self.end_tokens, lambda body: json_calls(body, tools))
