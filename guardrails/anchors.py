"""Finding where a pattern may match before running it: the speed of the detectors.

Python's regular expressions try a pattern at every position of the text (~50-400 ns each), far
too slow for 64 KB results in a few hundred microseconds. Every pattern here is tied to cheap
anchors found with ``str.find`` (a literal it must contain) or a ``bytes.translate`` mask (a run
of token characters or digits), and runs only in small windows around them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

Window = tuple[int, int]


def literal_hits(lowered: str, needles: Iterable[str]) -> Iterator[int]:
    """Every position where one of ``needles`` (lower case) starts in ``lowered``."""
    for needle in needles:
        at = lowered.find(needle)
        while at != -1:
            yield at
            at = lowered.find(needle, at + 1)


def lowered(text: str) -> str:
    """``text`` in lower case, one character for each of its own (non-ASCII as ``?``: lower()
    may lengthen some, and positions must stay those of ``text``)."""
    if text.isascii():
        return text.lower()
    return text.encode("ascii", "replace").decode("ascii").lower()


def run_hits(masked: bytes, run: bytes) -> Iterator[Window]:
    """Each maximal run in ``masked`` that starts with ``run`` (its byte repeated), as a span:
    the mask is one byte for each character of the text (``ascii_mask``)."""
    at = masked.find(run)
    while at != -1:
        end = masked.find(b" ", at)
        end = len(masked) if end == -1 else end
        yield at, end
        at = masked.find(run, end)


def ascii_mask(text: str, table: bytes) -> bytes:
    """``text`` as one byte per character (non-ASCII as ``?``), translated by ``table``."""
    return text.encode("ascii", "replace").translate(table)


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
