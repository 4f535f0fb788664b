"""Hermes / Qwen 2.5 and 3: ``<tool_call>{"name": .., "arguments": ..}</tool_call>`` blocks.

Models of the family also wrap the same JSON in other tags (``<function_call>``, ``<tools>``,
``<response>``, ``<json>``...), write ``<function=name>{...}</function>``, or answer with the bare
or fenced JSON as the whole reply (Qwen2.5-Coder, which never learnt the tags).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from adapters.text.base import (
    THINK_TAGS,
    Block,
    Call,
    choice_instruction,
    tools_json,
)
from adapters.text.jsonscan import JsonReader, dumps
from adapters.text.scan import parse_reply
from adapters.text.tags import FUNCTION, FUNCTION_NAMED, closer_of, function_tag, json_in_tag
from adapters.text.whole import FENCE_OPENER, json_calls, whole_reply
from llm_service.types import ToolCall, ToolChoice, ToolResultMessage, ToolSpec

OPEN = "<tool_call>"
CLOSE = "</tool_call>"
# Other tags the family's models put around the same JSON (llama.cpp accepts these for Hermes 2
# Pro, Qwen2.5-Coder uses <tools>).
TAGS = (OPEN, "<function_call>", "<tool>", "<tools>", "<response>", "<json>", "<JSON>", "<xml>")
END_TOKENS = ("<|im_end|>", "<|eot_id|>")


@dataclass(frozen=True)
class HermesFormat:
    name: str = "hermes"
    markers: tuple[str, ...] = (*TAGS, FUNCTION, FUNCTION_NAMED)
    openers: tuple[str, ...] = ("{", "[", FENCE_OPENER)
    think_tags: tuple[str, str] = THINK_TAGS
    end_tokens: tuple[str, ...] = END_TOKENS
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
        return f"<tool_response>\n{result.text}\n</tool_response>"

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
        body = start + len(marker)
        if marker in (FUNCTION, FUNCTION_NAMED):
            return function_tag(text, body, marker, final=final, tools=tools, reader=reader)
        return json_in_tag(text, body, closer_of(marker), final=final, tools=tools, reader=reader)

    def parse_leading(self, text: str, tools: Collection[str]) -> tuple[Call, ...] | None:
        return whole_reply(text, self.end_tokens, lambda body: self._body(body, tools))

    def _body(self, body: str, tools: Collection[str]) -> tuple[Call, ...] | None:
        calls = json_calls(body, tools)
        if calls is None and body.startswith("<"):  # a fence around tagged calls
            reply = parse_reply(self, body, tools)
            calls = reply.calls if reply.calls and reply.content is None else None
        return calls
