"""Finding where a JSON value ends inside model text, and reading it.

Brackets and closing tags inside JSON strings are data, so the end of a value is found by a
string- and escape-aware scan, never by a (non-greedy) regular expression.
"""

from __future__ import annotations

import json
import re
from enum import Enum
from typing import Any

_OUTSIDE = re.compile(r'[\[\]{}"]')
_INSIDE = re.compile(r'["\\]')
_CLOSERS = {"{": "}", "[": "]"}


class Verdict(Enum):
    """Why no value was read: the text ends first, or the text is not JSON here."""

    INCOMPLETE = "incomplete"
    INVALID = "invalid"


def skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def value_end(text: str, start: int) -> int | Verdict:
    """The index just past the JSON object, array or string starting at ``start``."""
    if start >= len(text):
        return Verdict.INCOMPLETE
    first = text[start]
    if first == '"':
        return _string_end(text, start + 1)
    if first not in _CLOSERS:
        return Verdict.INVALID
    return _container_end(text, start)


def _container_end(text: str, start: int) -> int | Verdict:
    expected = [_CLOSERS[text[start]]]
    pos = start + 1
    while expected:
        match = _OUTSIDE.search(text, pos)
        if match is None:
            return Verdict.INCOMPLETE
        char = match.group()
        if char == '"':
            end = _string_end(text, match.end())
            if isinstance(end, Verdict):
                return end
            pos = end
        elif char in _CLOSERS:
            expected.append(_CLOSERS[char])
            pos = match.end()
        elif char == expected[-1]:
            expected.pop()
            pos = match.end()
        else:
            return Verdict.INVALID
    return pos


def _string_end(text: str, pos: int) -> int | Verdict:
    while True:
        match = _INSIDE.search(text, pos)
        if match is None:
            return Verdict.INCOMPLETE
        if match.group() == '"':
            return match.end()
        if match.end() >= len(text):
            return Verdict.INCOMPLETE
        pos = match.end() + 1


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads(text: str) -> Any:
    """Strict JSON: NaN and Infinity are not JSON, whatever Python's parser allows."""
    return json.loads(text, parse_constant=_reject_constant)


def read_value(text: str, start: int) -> tuple[Any, int] | Verdict:
    """The JSON object/array/string at ``start`` (no leading whitespace) and where it ends."""
    end = value_end(text, start)
    if isinstance(end, Verdict):
        return end
    try:
        return loads(text[start:end]), end
    except (ValueError, RecursionError):
        return Verdict.INVALID


def read_sequence(
    text: str, start: int, final: bool, separator: str = ";"
) -> tuple[list[Any], int] | Verdict:
    """Values separated by ``separator`` (``a; b; c``); ends after the last value.

    Unless ``final``, returns INCOMPLETE while the text ends where another value could still
    follow, so a stream waits until the sequence is decided.
    """
    values: list[Any] = []
    pos = start
    while True:
        read = read_value(text, skip_ws(text, pos))
        if isinstance(read, Verdict):
            return read
        value, pos = read
        values.append(value)
        after = skip_ws(text, pos)
        if after >= len(text):
            return (values, pos) if final else Verdict.INCOMPLETE
        if text[after] != separator:
            return values, pos
        pos = after + 1


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
