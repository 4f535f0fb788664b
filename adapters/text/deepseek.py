"""DeepSeek V3, V3.1 and R1 tool-call markers.

Written here with ``|`` and ``_``; the real markers use the full-width bar U+FF5C and the
lower one-eighth block U+2581 (``<|tool_call_begin|>`` is
``<\\uff5ctool\\u2581call\\u2581begin\\uff5c>``).

V3:   ``<|tool_call_begin|>function<|tool_sep|>name\\n```json\\n{...}\\n```<|tool_call_end|>``
V3.1: ``<|tool_call_begin|>name<|tool_sep|>{...}<|tool_call_end|>``
both inside ``<|tool_calls_begin|>...<|tool_calls_end|>``. The R1 distills write the opening
marker in several ways (``<|tool_calls|>``, with ``_``, spaces or ``\\_``) and drop per-call
markers; a call's fence and closing markers may be missing, the block's last ones at the end.
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
    choice_instruction,
    closing_pending,
    tools_json,
)
from adapters.text.jsonscan import JsonReader, Verdict, dumps, skip_ws
from llm_service.types import ToolCall, ToolChoice, ToolResultMessage, ToolSpec


def _marker(words: str) -> str:
    return "<\uff5c" + words.replace(" ", "\u2581") + "\uff5c>"


CALLS_BEGIN = _marker("tool calls begin")
# How the R1 distills write the opening marker (llama.cpp accepts the same).
CALLS_BEGIN_VARIANTS = (
    CALLS_BEGIN,
    "<\uff5ctool_calls_begin\uff5c>",
    "<\uff5ctool calls begin\uff5c>",
    "<\uff5ctool\\_calls\\_begin\uff5c>",
    _marker("tool calls"),
)
CALLS_END = _marker("tool calls end")
CALL_BEGIN = _marker("tool call begin")
CALL_END = _marker("tool call end")
SEP = _marker("tool sep")
OUTPUT_BEGIN = _marker("tool output begin")
OUTPUT_END = _marker("tool output end")
END_OF_SENTENCE = _marker("end of sentence")
_NAME = re.compile(r"[A-Za-z0-9_.\-]+")
FENCE_OPEN = "```json"
FENCE_CLOSE = "```"


@dataclass(frozen=True)
class DeepSeekFormat:
    name: str = "deepseek"
    markers: tuple[str, ...] = CALLS_BEGIN_VARIANTS
    openers: tuple[str, ...] = ()
    think_tags: tuple[str, str] = THINK_TAGS
    end_tokens: tuple[str, ...] = (END_OF_SENTENCE,)
    results_as_tool_role: bool = False

    def render_tools(self, tools: Sequence[ToolSpec], choice: ToolChoice | None) -> str:
        return (
            "## Tools\nYou have access to the following tools:\n\n"
            + "\n".join(
                f"### {t['name']}\nDescription: {t['description']}\n\n"
                f"Parameters: {dumps(t['parameters'])}\n"
                for t in tools_json(tools, wrapped=False)
            )
            + "\nIMPORTANT: ALWAYS adhere to this exact format for tool use:\n"
            f"{CALLS_BEGIN}{CALL_BEGIN}tool_call_name{SEP}tool_call_arguments{CALL_END}"
            f"{{{{additional_tool_calls}}}}{CALLS_END}\n\n"
            "Where tool_call_arguments must be valid JSON." + choice_instruction(choice)
        )

    def render_calls(self, calls: Sequence[ToolCall]) -> str:
        body = "".join(f"{CALL_BEGIN}{c.name}{SEP}{dumps(c.arguments)}{CALL_END}" for c in calls)
        return f"{CALLS_BEGIN}{body}{CALLS_END}"

    def render_result(self, result: ToolResultMessage, name: str) -> str:
        return f"{OUTPUT_BEGIN}{result.text}{OUTPUT_END}"

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
        calls: list[Call] = []
        pos = start + len(marker)
        while True:
            pos = skip_ws(text, pos)
            if text.startswith(CALLS_END, pos):
                return Parsed(tuple(calls), pos + len(CALLS_END)) if calls else Verdict.INVALID
            if closing_pending(text, pos, CALLS_END) or closing_pending(text, pos, CALL_BEGIN):
                # Output often ends without the closing marker.
                if not final:
                    return Verdict.INCOMPLETE
                return Parsed(tuple(calls), len(text)) if calls else Verdict.INVALID
            begin = pos + len(CALL_BEGIN) if text.startswith(CALL_BEGIN, pos) else pos
            read = _one_call(text, begin, final, tools, reader)
            if isinstance(read, tuple):
                calls.append(read[0])
                pos = read[1]
            elif calls and begin == pos and (read is Verdict.INVALID or final):
                return Parsed(tuple(calls), pos)  # text after the calls, block left unclosed
            else:
                return read

    def parse_leading(self, text: str, tools: Collection[str]) -> tuple[Call, ...] | None:
        return None


def _one_call(
    text: str, pos: int, final: bool, tools: Collection[str], reader: JsonReader
) -> tuple[Call, int] | Verdict:
    """One call (its opening marker already read) and the index past it."""
    named = _call_name(text, pos)
    if isinstance(named, Verdict):
        return named
    name, pos = named
    opened = _optional(text, skip_ws(text, pos), FENCE_OPEN, final)
    if isinstance(opened, Verdict):
        return opened
    read = reader.read_value(text, skip_ws(text, opened))
    if isinstance(read, Verdict):
        return read
    arguments, pos = read
    for closer in (FENCE_CLOSE, CALL_END):
        closed = _optional(text, skip_ws(text, pos), closer, final)
        if isinstance(closed, Verdict):
            return closed
        pos = closed
    call = call_from_object({"name": name, "arguments": arguments}, tools)
    return Verdict.INVALID if call is None else (call, pos)


def _call_name(text: str, pos: int) -> tuple[str, int] | Verdict:
    first = _name_then(text, pos, SEP)
    if isinstance(first, Verdict):
        return first
    name, pos = first
    # V3 writes the type ``function`` first; V3.1 goes straight to the arguments.
    if name == "function" and not text.startswith(("{", "["), skip_ws(text, pos)):
        return _name(text, pos)
    return name, pos


def _name(text: str, pos: int) -> tuple[str, int] | Verdict:
    match = _NAME.match(text, pos)
    if match is None:
        return Verdict.INCOMPLETE if pos >= len(text) else Verdict.INVALID
    if match.end() >= len(text):
        return Verdict.INCOMPLETE  # the name may go on
    return match.group(), match.end()


def _name_then(text: str, pos: int, literal: str) -> tuple[str, int] | Verdict:
    named = _name(text, pos)
    if isinstance(named, Verdict):
        return named
    after = _expect(text, named[1], literal)
    return after if isinstance(after, Verdict) else (named[0], after)


def _optional(text: str, pos: int, literal: str, final: bool) -> int | Verdict:
    """Past ``literal`` when it is there; ``pos`` when it is not; INCOMPLETE while undecided."""
    if text.startswith(literal, pos):
        return pos + len(literal)
    rest = text[pos : pos + len(literal)]
    if not final and literal.startswith(rest) and pos + len(literal) > len(text):
        return Verdict.INCOMPLETE
    return pos


def _expect(text: str, pos: int, literal: str) -> int | Verdict:
    if text.startswith(literal, pos):
        return pos + len(literal)
    rest = text[pos : pos + len(literal)]
    return (
        Verdict.INCOMPLETE
        if literal.startswith(rest) and pos + len(literal) > len(text)
        else Verdict.INVALID
    )
