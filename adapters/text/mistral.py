"""Mistral: ``[TOOL_CALLS] [{...}]`` arrays and ``[TOOL_CALLS]name[CALL_ID]id[ARGS]{...}``.

A detokenizer that skips special tokens drops ``[ARGS]`` and ``[CALL_ID]``
(``[TOOL_CALLS]name{...}``) or ``[TOOL_CALLS]`` itself (the bare array is then the whole reply).
Ids the model writes are not used: a model can repeat an id from history, and the caller needs
every id to be unique, so the stream issues its own. ``[THINK]...[/THINK]`` is reasoning.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from adapters.text.base import (
    Block,
    Call,
    Parsed,
    call_from_object,
    calls_from_json,
    choice_instruction,
    closing_pending,
    tools_json,
)
from adapters.text.jsonscan import JsonReader, Verdict, dumps, skip_ws
from adapters.text.whole import FENCE_OPENER, json_calls, whole_reply
from llm_service.types import ToolCall, ToolChoice, ToolResultMessage, ToolSpec

TOOL_CALLS = "[TOOL_CALLS]"
TOOL_CALLS_END = "[/TOOL_CALLS]"
ARGS = "[ARGS]"
CALL_ID = "[CALL_ID]"
_NAME = re.compile(r"[A-Za-z0-9_.\-]+")
_ID = re.compile(r"[A-Za-z0-9]+")


def mistral_id(call_id: str) -> str:
    """Mistral's templates want 9-character alphanumeric ids; ours are longer."""
    return hashlib.sha256(call_id.encode()).hexdigest()[:9]


@dataclass(frozen=True)
class MistralFormat:
    name: str = "mistral"
    markers: tuple[str, ...] = (TOOL_CALLS,)
    openers: tuple[str, ...] = ("[", "{", FENCE_OPENER)
    think_tags: tuple[str, str] = ("[THINK]", "[/THINK]")
    end_tokens: tuple[str, ...] = ()
    results_as_tool_role: bool = False

    def render_tools(self, tools: Sequence[ToolSpec], choice: ToolChoice | None) -> str:
        return (
            f"[AVAILABLE_TOOLS]{dumps(tools_json(tools))}[/AVAILABLE_TOOLS]\n"
            "To call tools, answer with [TOOL_CALLS] followed by a JSON array of "
            '{"name": ..., "arguments": {...}} objects.' + choice_instruction(choice)
        )

    def render_calls(self, calls: Sequence[ToolCall]) -> str:
        objects = [
            {"name": c.name, "arguments": c.arguments, "id": mistral_id(c.id)} for c in calls
        ]
        return TOOL_CALLS + dumps(objects)

    def render_result(self, result: ToolResultMessage, name: str) -> str:
        payload = {"content": result.text, "call_id": mistral_id(result.tool_call_id)}
        return f"[TOOL_RESULTS]{dumps(payload)}[/TOOL_RESULTS]"

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
        body = skip_ws(text, start + len(marker))
        if body >= len(text):
            return Verdict.INCOMPLETE
        if text[body] in "[{":
            read = reader.read_value(text, body)
            if isinstance(read, Verdict):
                return read
            calls = calls_from_json(read[0], tools)
            if calls is None:
                return Verdict.INVALID
            return _optional_end(text, read[1], final, calls)
        return _named_call(text, body, tools, reader)

    def parse_leading(self, text: str, tools: Collection[str]) -> tuple[Call, ...] | None:
        return whole_reply(text, (TOOL_CALLS_END,), lambda body: json_calls(body, tools))


def _optional_end(text: str, end: int, final: bool, calls: tuple[Call, ...]) -> Block:
    """Some templates close the array with ``[/TOOL_CALLS]``."""
    after = skip_ws(text, end)
    if text.startswith(TOOL_CALLS_END, after):
        return Parsed(calls, after + len(TOOL_CALLS_END))
    if not final and closing_pending(text, end, TOOL_CALLS_END):
        return Verdict.INCOMPLETE
    return Parsed(calls, end)


def _named_call(text: str, start: int, tools: Collection[str], reader: JsonReader) -> Block:
    """``name[ARGS]{...}``, ``name[CALL_ID]abc123xyz[ARGS]{...}`` or ``name{...}``."""
    name = _NAME.match(text, start)
    if name is None:
        return Verdict.INVALID
    pos = _after_tag(text, name.end(), CALL_ID)
    if isinstance(pos, int):
        call_id = _ID.match(text, pos)
        if call_id is None or call_id.end() >= len(text):
            return Verdict.INCOMPLETE if pos >= len(text) or call_id else Verdict.INVALID
        pos = call_id.end()
    elif pos is Verdict.INCOMPLETE:
        return pos
    else:
        pos = name.end()
    args = pos if text.startswith("{", pos) else _after_tag(text, pos, ARGS)
    if isinstance(args, Verdict):
        return args
    read = reader.read_value(text, skip_ws(text, args))
    if isinstance(read, Verdict):
        return read
    call = call_from_object({"name": name.group(), "arguments": read[0]}, tools)
    return Verdict.INVALID if call is None else Parsed((call,), read[1])


def _after_tag(text: str, pos: int, tag: str) -> int | Verdict:
    if text.startswith(tag, pos):
        return pos + len(tag)
    rest = text[pos : pos + len(tag)]
    return (
        Verdict.INCOMPLETE
        if tag.startswith(rest) and pos + len(tag) > len(text)
        else Verdict.INVALID
    )
