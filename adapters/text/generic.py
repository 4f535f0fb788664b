"""Any model: a reply that, as a whole, is a JSON call (or a fenced JSON block holding one)."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from adapters.text.base import (
    THINK_TAGS,
    Block,
    Call,
    call_from_object,
    calls_from_values,
    choice_instruction,
    tools_json,
)
from adapters.text.jsonscan import JsonReader, Verdict, dumps, read_value
from llm_service.types import ToolCall, ToolChoice, ToolResultMessage, ToolSpec

_FENCE = re.compile(r"```(?:json)?[ \t]*\n(?P<body>.*)\n[ \t]*```", re.DOTALL)


@dataclass(frozen=True)
class GenericFormat:
    name: str = "generic"
    markers: tuple[str, ...] = ()
    openers: tuple[str, ...] = ("{", "[", "```")
    think_tags: tuple[str, str] = THINK_TAGS
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
        return dumps({"tool_result": {"name": name, "content": result.content}})

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

    def parse_leading(self, text: str, tools: Collection[str]) -> tuple[Call, ...] | None:
        text = text.strip()
        # The fence must wrap the whole reply; a closing fence inside a JSON string is data,
        # which the greedy body and the full JSON read below make sure of.
        fenced = _FENCE.fullmatch(text)
        if fenced:
            text = fenced.group("body").strip()
        read = read_value(text, 0)
        if isinstance(read, Verdict) or read[1] != len(text):
            return None
        return _calls(read[0], tools)


def _calls(value: Any, tools: Collection[str]) -> tuple[Call, ...] | None:
    if isinstance(value, list):
        return calls_from_values(value, tools)
    if isinstance(value, dict) and set(value) == {"tool_calls"}:
        inner = value["tool_calls"]
        return calls_from_values(inner, tools) if isinstance(inner, list) else None
    if isinstance(value, dict) and set(value) == {"tool_call"}:
        value = value["tool_call"]
    call = call_from_object(value, tools)
    return (call,) if call else None
