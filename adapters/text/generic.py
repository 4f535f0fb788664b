"""Any model: a reply that, as a whole, is a JSON call (or a fenced JSON block holding one)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from adapters.text.base import (
    THINK_TAGS,
    Block,
    Item,
    Text,
    choice_instruction,
    tools_json,
)
from adapters.text.jsonscan import JsonReader, Verdict, dumps, read_value
from adapters.text.whole import FENCE_OPENER, json_calls, whole_reply
from llm_service.types import ToolCall, ToolChoice, ToolResultMessage, ToolSpec


@dataclass(frozen=True)
class GenericFormat:
    name: str = "generic"
    markers: tuple[str, ...] = ()
    openers: tuple[str, ...] = ("{", "[", FENCE_OPENER)
    think_tags: tuple[str, str] = THINK_TAGS
    end_tokens: tuple[str, ...] = ()
    results_as_tool_role: bool = False

    def render_tools(self, tools: Sequence[ToolSpec], choice: ToolChoice | None) -> str:
        return (
            "You can call these tools (JSON Schema parameters):\n"
            f"{dumps(tools_json(tools, wrapped=False))}\n\n"
            "To call a tool, reply with only a JSON object and nothing else:\n"
            '{"name": "<tool name>", "arguments": {<arguments>}}\n'
            'To call several tools at once: {"tool_calls": [<call>, <call>]}\n'
            "Otherwise answer normally." + choice_instruction(choice)
        )

    def render_calls(self, calls: Sequence[ToolCall]) -> str:
        objects = [{"name": c.name, "arguments": c.arguments} for c in calls]
        return dumps(objects[0] if len(objects) == 1 else {"tool_calls": objects})

    def render_result(self, result: ToolResultMessage, name: str) -> str:
        return dumps({"tool_result": {"name": name, "content": result.text}})

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
        return Verdict.INVALID

    def parse_leading(self, text: str, tools: Collection[str]) -> tuple[Item, ...] | None:
        answer = _response(text)
        if answer is not None:
            return (Text(answer),) if answer else ()
        return whole_reply(text, self.end_tokens, lambda body: json_calls(body, tools))


def _response(text: str) -> str | None:
    """llama.cpp's generic schema answers in words as ``{"response": "..."}``: the answer."""
    body = text.strip()
    read = read_value(body, 0) if body.startswith("{") else Verdict.INVALID
    if isinstance(read, Verdict) or read[1] != len(body):
        return None
    value = read[0]
    if (
        isinstance(value, dict)
        and set(value) == {"response"}
        and isinstance(value["response"], str)
    ):
        return str(value["response"])
    return None
