"""Finding where a pattern may match before running it: the speed of the detectors.

Python's regular expressions try a pattern at every position of the text (~50-400 ns each), far
too slow for 64 KB results in a few hundred microseconds. Every pattern here is tied to cheap
anchors and runs only in small windows around them. What is cheap, per 64 KB: ``bytes.find`` of
one byte (``memchr``, ~1 µs), of a word (~15-45 µs; the longer the word, the faster), one
``bytes.translate`` into a mask of character classes (~22 µs), then ``find`` of a long run in
that mask (~1 µs). So the text's byte views are made once per scanned string (``Text``) and
shared by the detectors, an anchor with a rare byte is searched only when that byte is there at
all, and runs of token characters or digits are found in masks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

Window = tuple[int, int]


class Text:
    """A scanned string and its byte views: ``raw`` one byte per character (non-ASCII as
    ``?``, so positions are the string's), ``low`` the same in lower case."""

    __slots__ = ("_low", "raw", "size", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.size = len(text)
        self.raw = text.encode("ascii", "replace")
        self._low: bytes | None = None

    @property
    def low(self) -> bytes:
        if self._low is None:  # made when a detector first needs it (~15 µs per 64 KB)
            self._low = self.raw.lower()
        return self._low


def literal_hits(haystack: bytes, needles: Iterable[bytes]) -> Iterator[int]:
    """Every position where one of ``needles`` starts in ``haystack``; a needle with a byte other
    than a letter, digit or space is looked for only when that byte occurs at all (one
    ``memchr``)."""
    for needle in needles:
        rare = needle.strip(_COMMON)
        if rare and haystack.find(rare[:1]) == -1:
            continue
        at = haystack.find(needle)
        while at != -1:
            yield at
            at = haystack.find(needle, at + 1)


_COMMON = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 "


def mask_table(chars: str, mark: bytes) -> bytes:
    return bytes(mark[0] if chr(i) in chars else 32 for i in range(256))


def around(hits: Iterable[int], before: int, after: int, size: int) -> list[Window]:
    """The windows ``[hit - before, hit + after)`` within the text, merged where they touch."""
    merged: list[Window] = []
    for hit in sorted(hits):
        start, end = max(0, hit - before), min(size, hit + after)
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def search(
    pattern: re.Pattern[str], text: str, windows: Iterable[Window]
) -> Iterator[re.Match[str]]:
    """Matches of ``pattern`` in the windows (lookarounds see the whole text)."""
    for start, end in windows:
        yield from pattern.finditer(text, start, end)
