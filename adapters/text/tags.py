"""Calls in XML-like tags, shared by the families that use them.

``<tag>{...}</tag>`` holds one call object or an array of them; ``<function=name>{...}</function>``
and ``<function name="name">{...}</function>`` hold the arguments of the named function. The
closing tag may be missing when the reply ends right after the JSON.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from adapters.text.base import (
    Block,
    Call,
    Parsed,
    call_from_object,
    calls_from_json,
    closing_pending,
)
from adapters.text.jsonscan import JsonReader, Verdict, skip_ws

FUNCTION = "<function="
FUNCTION_NAMED = '<function name="'
FUNCTION_END = "</function>"
NAME = re.compile(r"[A-Za-z0-9_.\-]+")


def closer_of(tag: str) -> str:
    return "</" + tag[1:]


def json_in_tag(
    text: str, start: int, closer: str, *, final: bool, tools: Collection[str], reader: JsonReader
) -> Block:
    """After an opening tag: a call object or an array of calls, then ``closer``."""
    read = reader.read_value(text, skip_ws(text, start))
    if isinstance(read, Verdict):
        return read
    value, end = read
    calls = calls_from_json(value, tools)
    if calls is None:
        return Verdict.INVALID
    return _closed(text, end, closer, final, calls)


def function_tag(
    text: str, start: int, marker: str, *, final: bool, tools: Collection[str], reader: JsonReader
) -> Block:
    """After ``<function=`` or ``<function name="``: the name, ``>``, the arguments object."""
    named = _function_name(text, start, '">' if marker == FUNCTION_NAMED else ">")
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
    return _closed(text, end, FUNCTION_END, final, (call,))


def _closed(text: str, end: int, closer: str, final: bool, calls: tuple[Call, ...]) -> Block:
    after = skip_ws(text, end)
    if text.startswith(closer, after):
        return Parsed(calls, after + len(closer))
    if closing_pending(text, end, closer):
        # The closing tag is often missing at the very end of the output.
        return Parsed(calls, len(text)) if final else Verdict.INCOMPLETE
    return Verdict.INVALID


def _function_name(text: str, start: int, after: str) -> tuple[str, int] | Verdict:
    name = NAME.match(text, start)
    name_end = name.end() if name else start
    rest = text[name_end : name_end + len(after)]
    if name_end >= len(text) or (len(rest) < len(after) and after.startswith(rest)):
        return Verdict.INCOMPLETE
    if name is None or rest != after:
        return Verdict.INVALID
    return name.group(), name_end + len(after)
