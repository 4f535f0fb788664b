"""Finding where a JSON value ends inside model text, and reading it.

Brackets and closing tags inside JSON strings are data, so the end of a value is found by a
string- and escape-aware scan, never by a (non-greedy) regular expression.

A ``JsonReader`` belongs to one growing text (one streamed reply): it remembers how far it has
scanned each value, so a long argument streamed in many small chunks is scanned once, not once
per chunk.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
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


@dataclass
class _Progress:
    """Where the scan of one value stopped because the text ended."""

    pos: int
    expected: list[str]
    in_string: bool


def _advance(text: str, progress: _Progress) -> int | Verdict:
    """Continue a scan; returns the index past the value, or why it has none (yet)."""
    while True:
        if progress.in_string:
            if not _advance_string(text, progress):
                return Verdict.INCOMPLETE
            if not progress.expected:
                return progress.pos
            continue
        match = _OUTSIDE.search(text, progress.pos)
        if match is None:
            progress.pos = len(text)
            return Verdict.INCOMPLETE
        char, progress.pos = match.group(), match.end()
        if char == '"':
            progress.in_string = True
        elif char in _CLOSERS:
            progress.expected.append(_CLOSERS[char])
        elif char == progress.expected[-1]:
            progress.expected.pop()
            if not progress.expected:
                return progress.pos
        else:
            return Verdict.INVALID


def _advance_string(text: str, progress: _Progress) -> bool:
    """Move past the closing quote; False when the text ends inside the string."""
    while True:
        match = _INSIDE.search(text, progress.pos)
        if match is None:
            progress.pos = len(text)
            return False
        if match.group() == '"':
            progress.pos, progress.in_string = match.end(), False
            return True
        if match.end() >= len(text):  # the escaped character has not arrived yet
            progress.pos = match.start()
            return False
        progress.pos = match.end() + 1


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads(text: str) -> Any:
    """Strict JSON: NaN and Infinity are not JSON, whatever Python's parser allows."""
    return json.loads(text, parse_constant=_reject_constant)


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


@dataclass
class JsonReader:
    """Reads JSON values out of one text that may only grow between calls."""

    _scans: dict[int, _Progress | int | Verdict] = field(default_factory=dict)
    _values: dict[int, tuple[Any, int] | Verdict] = field(default_factory=dict)
    _invalid_at: dict[int, int] = field(default_factory=dict)

    def value_end(self, text: str, start: int) -> int | Verdict:
        """The index just past the JSON object, array or string starting at ``start``."""
        known = self._scans.get(start)
        if known is None:
            if start >= len(text):
                return Verdict.INCOMPLETE
            first = text[start]
            if first != '"' and first not in _CLOSERS:
                return Verdict.INVALID
            closers = [] if first == '"' else [_CLOSERS[first]]
            known = _Progress(start + 1, closers, in_string=first == '"')
        if not isinstance(known, _Progress):
            return known
        end = _advance(text, known)
        self._scans[start] = known if end is Verdict.INCOMPLETE else end
        if end is Verdict.INVALID:
            self._invalid_at[start] = known.pos
        return end

    def invalid_at(self, start: int) -> int | None:
        """Just past the character that made the value at ``start`` invalid (a stray closer)."""
        return self._invalid_at.get(start)

    def read_value(self, text: str, start: int) -> tuple[Any, int] | Verdict:
        """The JSON object/array/string at ``start`` (no leading whitespace) and its end."""
        known = self._values.get(start)
        if known is not None:
            return known
        end = self.value_end(text, start)
        if end is Verdict.INCOMPLETE:
            return end
        read: tuple[Any, int] | Verdict = Verdict.INVALID
        if not isinstance(end, Verdict):
            try:
                read = loads(text[start:end]), end
            except (ValueError, RecursionError):
                read = Verdict.INVALID
        self._values[start] = read
        return read

    def read_sequence(
        self, text: str, start: int, final: bool, separator: str = ";"
    ) -> tuple[list[Any], int] | Verdict:
        """Objects separated by ``separator`` or only whitespace (``a; b`` or ``a\nb``); ends
        after the last value.

        Unless ``final``, returns INCOMPLETE while the text ends where another value could
        still follow, so a stream waits until the sequence is decided.
        """
        values: list[Any] = []
        pos = start
        while True:
            read = self.read_value(text, skip_ws(text, pos))
            if isinstance(read, Verdict):
                return read
            value, pos = read
            values.append(value)
            after = skip_ws(text, pos)
            if after >= len(text):
                return (values, pos) if final else Verdict.INCOMPLETE
            if text[after] == separator:
                pos = after + 1
            elif text[after] != "{":
                return values, pos


def read_value(text: str, start: int) -> tuple[Any, int] | Verdict:
    """One-off read of a complete text."""
    return JsonReader().read_value(text, start)
