"""Llama 3.1 / 3.3 JSON calls, ``<function=name>{...}</function>`` and Llama 4 python blocks.

Calls are ``{"name": .., "parameters": ..}`` (or ``arguments``), as the whole reply or after
``<|python_tag|>``, several separated by ``;``, optionally ending in ``<|eom_id|>``. Llama 4
wraps calls in ``<|python_start|>...<|python_end|>`` (JSON or the pythonic list).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from adapters.text.base import (
    THINK_TAGS,
    Block,
    Call,
    Parsed,
    call_from_object,
    calls_from_json,
    calls_from_values,
    choice_instruction,
    closing_pending,
    tools_json,
)
from adapters.text.jsonscan import JsonReader, Verdict, dumps, read_value, skip_ws
from adapters.text.pythonic import PYTHON_END, PYTHON_START, parse_call_list, strip_end_tokens
from llm_service.types import ToolCall, ToolChoice, ToolResultMessage, ToolSpec

PYTHON_TAG = "<|python_tag|>"
FUNCTION = "<function="
FUNCTION_END = "</function>"
_END_TOKENS = ("<|eom_id|>", "<|eot_id|>")
_NAME = re.compile(r"[A-Za-z0-9_.\-]+")


@dataclass(frozen=True)
class Llama3Format:
    name: str = "llama3"
    markers: tuple[str, ...] = (PYTHON_TAG, FUNCTION, PYTHON_START)
    openers: tuple[str, ...] = ("{",)
    think_tags: tuple[str, str] = THINK_TAGS
    results_as_tool_role: bool = True

    def render_tools(self, tools: Sequence[ToolSpec], choice: ToolChoice | None) -> str:
        functions = "\n\n".join(dumps(t) for t in tools_json(tools))
        return (
            "Environment: ipython\n\n"
            "Given the following functions, please respond with a JSON for a function call "
            "with its proper arguments that best answers the given prompt.\n\n"
            'Respond in the format {"name": function name, "parameters": dictionary of '
            "argument name and its value}. Do not use variables.\n\n"
            f"{functions}" + choice_instruction(choice)
        )

    def render_calls(self, calls: Sequence[ToolCall]) -> str:
        return "; ".join(dumps({"name": c.name, "parameters": c.arguments}) for c in calls)

    def render_result(self, result: ToolResultMessage, name: str) -> str:
        return result.content

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
        if marker == PYTHON_TAG:
            return _json_calls(text, skip_ws(text, body), final, tools, reader)
        if marker == FUNCTION:
            return _function_block(text, body, final, tools, reader)
        return _python_block(text, body, final, tools)

    def parse_leading(self, text: str, tools: Collection[str]) -> tuple[Call, ...] | None:
        block = _json_calls(text, 0, True, tools, JsonReader())
        if not isinstance(block, Parsed) or text[block.end :].strip():
            return None
        return block.calls


def _json_calls(
    text: str, start: int, final: bool, tools: Collection[str], reader: JsonReader
) -> Block:
    """``{..}; {..}`` then an optional end-of-message token."""
    read = reader.read_sequence(text, start, final)
    if isinstance(read, Verdict):
        return read
    values, end = read
    calls = calls_from_values(values, tools)
    if calls is None:
        return Verdict.INVALID
    after = skip_ws(text, end)
    for token in _END_TOKENS:
        if text.startswith(token, after):
            return Parsed(calls, after + len(token))
        if not final and closing_pending(text, end, token):
            return Verdict.INCOMPLETE
    return Parsed(calls, end)


def _function_block(
    text: str, start: int, final: bool, tools: Collection[str], reader: JsonReader
) -> Block:
    """``<function=name>{"a": 1}</function>``."""
    named = _function_name(text, start)
    if isinstance(named, Verdict):
        return named
    name, body = named
    read = reader.read_value(text, skip_ws(text, body))
    if isinstance(read, Verdict):
        return read
    arguments, end = read
    call = call_from_object({"name": name, "arguments": arguments}, tools)
    if call is None:
        return Verdict.INVALID
    after = skip_ws(text, end)
    if text.startswith(FUNCTION_END, after):
        return Parsed((call,), after + len(FUNCTION_END))
    if closing_pending(text, end, FUNCTION_END):
        return Parsed((call,), len(text)) if final else Verdict.INCOMPLETE
    return Verdict.INVALID


def _function_name(text: str, start: int) -> tuple[str, int] | Verdict:
    name = _NAME.match(text, start)
    name_end = name.end() if name else start
    if name_end >= len(text):
        return Verdict.INCOMPLETE
    if name is None or text[name_end] != ">":
        return Verdict.INVALID
    return name.group(), name_end + 1


def _python_block(text: str, start: int, final: bool, tools: Collection[str]) -> Block:
    """Llama 4: ``<|python_start|>`` JSON calls or a pythonic list ``<|python_end|>``."""
    end = text.find(PYTHON_END, start)
    if end < 0 and not final:
        return Verdict.INCOMPLETE
    body = strip_end_tokens(text[start:] if end < 0 else text[start:end])
    calls = parse_call_list(body, tools) if body.startswith("[") else None
    if calls is None:
        calls = _json_body(body, tools)
    if calls is None:
        return Verdict.INVALID
    return Parsed(calls, len(text) if end < 0 else end + len(PYTHON_END))


def _json_body(body: str, tools: Collection[str]) -> tuple[Call, ...] | None:
    if body.startswith("["):
        read = read_value(body, 0)
        if isinstance(read, Verdict) or read[1] != len(body):
            return None
        return calls_from_json(read[0], tools)
    block = _json_calls(body, 0, True, tools, JsonReader())
    if not isinstance(block, Parsed) or body[block.end :].strip():
        return None
    return block.calls
