"""Running a format's corpus whole and streamed under many chunkings, and comparing.

Streaming goes through ``ReplyEvents``, the code the adapter streams with, so what is checked
is what a caller receives: content deltas, tool-call deltas with ids, reasoning.
"""

from __future__ import annotations

import codecs
import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from adapters.text.adapter import ReplyEvents, new_call_id
from adapters.text.base import ToolFormat
from adapters.text.recover import DeclaredTools
from adapters.text.scan import Reply, parse_reply
from llm_service.types import TextDelta, ThinkingDelta, ToolCallDelta

TOOLS = frozenset({"get_weather", "search", "get_time"})
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]{1,3}")


@dataclass(frozen=True)
class Case:
    id: str
    text: str
    content: str | None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    reasoning: str | None = None


@dataclass
class Streamed:
    content: str | None
    calls: list[tuple[str, dict[str, Any]]]
    ids: list[str]
    reasoning: str | None


def chunkings(text: str) -> Iterator[tuple[str, list[str]]]:
    yield "whole", [text]
    yield "one-char", list(text)
    yield "token-like", _TOKEN.findall(text)
    for seed in range(4):
        yield f"random-{seed}", _random_chunks(text, random.Random(seed))
    yield "utf8-bytes", _utf8_chunks(text, random.Random(99))


def _random_chunks(text: str, rng: random.Random) -> list[str]:
    chunks, pos = [], 0
    while pos < len(text):
        size = rng.randint(1, 9)
        chunks.append(text[pos : pos + size])
        pos += size
    return chunks


def _utf8_chunks(text: str, rng: random.Random) -> list[str]:
    """Bytes split anywhere (inside multi-byte characters too), decoded as an SDK decodes."""
    data = text.encode()
    decoder = codecs.getincrementaldecoder("utf-8")()
    chunks, pos = [], 0
    while pos < len(data):
        size = rng.randint(1, 5)
        chunks.append(decoder.decode(data[pos : pos + size]))
        pos += size
    chunks.append(decoder.decode(b"", final=True))
    return chunks


def stream(
    fmt: ToolFormat, chunks: list[str], tools: DeclaredTools | frozenset[str] = TOOLS
) -> Streamed:
    events = ReplyEvents(fmt, tools, new_call_id)
    out = [e for chunk in chunks for e in events.feed(TextDelta(chunk))]
    out.extend(events.finish())
    content = "".join(e.text for e in out if isinstance(e, TextDelta))
    reasoning = "".join(e.text for e in out if isinstance(e, ThinkingDelta))
    calls = [e for e in out if isinstance(e, ToolCallDelta)]
    assert [c.index for c in calls] == list(range(len(calls)))  # each call once, in order
    assert all(c.id and c.name for c in calls)
    return Streamed(
        content or None,
        [(c.name or "", json.loads(c.arguments)) for c in calls],
        [c.id or "" for c in calls],
        reasoning or None,
    )


def whole(fmt: ToolFormat, text: str, tools: frozenset[str] = TOOLS) -> Reply:
    return parse_reply(fmt, text, tools)


def check(fmt: ToolFormat, case: Case) -> None:
    reply = whole(fmt, case.text)
    assert reply.content == case.content
    assert [(c.name, c.arguments) for c in reply.calls] == case.calls
    assert reply.reasoning == case.reasoning
    for name, chunks in chunkings(case.text):
        assert "".join(chunks) == case.text
        streamed = stream(fmt, chunks)
        assert (streamed.content, streamed.calls, streamed.reasoning) == (
            case.content,
            case.calls,
            case.reasoning,
        ), name
        assert len(set(streamed.ids)) == len(streamed.ids), name
