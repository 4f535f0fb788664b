"""Every corpus case through the text adapter's real paths, whole and streamed, with one result.

Streams are cut at seeded random boundaries, one character at a time and inside UTF-8
sequences; each must give the content, calls and reasoning of the whole reply, which must be
the case's expectation. The upstream here replays the case's text in the given chunks; the same
cases also run over HTTP through the OpenAI adapter and the wire-faithful fake
(``test_corpus_http.py``).
"""

from __future__ import annotations

import codecs
import json
import random
from collections import Counter
from collections.abc import AsyncGenerator, Iterator
from dataclasses import dataclass

import pytest

from adapters.text.adapter import Choice, TextToolsAdapter
from adapters.text.select import FORMATS
from llm_service.types import (
    AssistantMessage,
    ChatRequest,
    ChatResponse,
    StreamDone,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolSpec,
    Usage,
    UserMessage,
)
from tests.adapters.text.corpus_files import RULES, CorpusCase, load

CASES = load()
MIN_CASES = 250


@dataclass(frozen=True)
class Outcome:
    content: str | None
    calls: list[tuple[str, dict[str, object]]]
    reasoning: str | None
    finish_reason: str


class Replay:
    """An upstream that answers with the given text, streamed in the given chunks."""

    provider = "replay"

    def __init__(self, chunks: list[str]) -> None:
        self._chunks = chunks

    def _response(self) -> ChatResponse:
        text = "".join(self._chunks)
        return ChatResponse(AssistantMessage(content=text or None), "stop", Usage(3, 5), "m")

    async def complete(self, request: ChatRequest) -> ChatResponse:
        return self._response()

    async def stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        for chunk in self._chunks:
            if chunk:
                yield TextDelta(chunk)
        yield StreamDone(self._response())

    async def probe(self) -> str | None:
        return None

    async def aclose(self) -> None:
        return None


def request_for(case: CorpusCase) -> ChatRequest:
    tools = tuple(
        ToolSpec(name, f"{name} tool", case.schemas.get(name, {"type": "object"}))
        for name in case.tools
    )
    choice = "none" if case.tool_choice == "none" else None
    return ChatRequest(messages=(UserMessage("Go."),), tools=tools, tool_choice=choice)


def outcome_of(response: ChatResponse) -> Outcome:
    message = response.message
    reasoning = "".join(t.text for t in message.thinking) or None
    calls = [(c.name, c.arguments) for c in message.tool_calls]
    return Outcome(message.content, calls, reasoning, response.finish_reason)


def expected(case: CorpusCase) -> Outcome:
    reason = "tool_calls" if case.calls else "stop"
    return Outcome(case.content, case.calls, case.reasoning, reason)


def adapter_for(case: CorpusCase, inner: Replay) -> TextToolsAdapter:
    """As the model entry's ``reasoning`` makes it, or (``template``) as detection does."""
    fmt = FORMATS[case.format]

    async def from_template() -> Choice:
        return Choice(fmt, reasoning_open=True)

    if case.reasoning_open == "template":
        return TextToolsAdapter(inner, fmt, detect=from_template)
    return TextToolsAdapter(inner, fmt, reasoning=case.reasoning_open or None)


async def whole(case: CorpusCase) -> Outcome:
    adapter = adapter_for(case, Replay([case.output]))
    return outcome_of(await adapter.complete(request_for(case)))


async def streamed(case: CorpusCase, chunks: list[str]) -> Outcome:
    adapter = adapter_for(case, Replay(chunks))
    events = [e async for e in adapter.stream(request_for(case))]
    done = events.pop()
    assert isinstance(done, StreamDone)
    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    # Each call arrives once, whole, in order, with its own id.
    assert [d.index for d in deltas] == list(range(len(deltas)))
    assert len({d.id for d in deltas}) == len(deltas)
    assert [d.id for d in deltas] == [c.id for c in done.response.message.tool_calls]
    text = "".join(e.text for e in events if isinstance(e, TextDelta)) or None
    reasoning = "".join(e.text for e in events if isinstance(e, ThinkingDelta)) or None
    calls = [(d.name or "", json.loads(d.arguments)) for d in deltas]
    result = Outcome(text, calls, reasoning, done.response.finish_reason)
    assert outcome_of(done.response) == result  # what was streamed is what was assembled
    return result


def chunkings(text: str) -> Iterator[tuple[str, list[str]]]:
    yield "one-char", list(text)
    for seed in range(3):
        yield f"random-{seed}", _random_chunks(text, random.Random(seed))
    yield "utf8-bytes", _utf8_chunks(text, random.Random(7))


def _random_chunks(text: str, rng: random.Random) -> list[str]:
    chunks, pos = [], 0
    while pos < len(text):
        size = rng.randint(1, 8)
        chunks.append(text[pos : pos + size])
        pos += size
    return chunks


def _utf8_chunks(text: str, rng: random.Random) -> list[str]:
    """Bytes split anywhere, decoded incrementally as an SDK decodes a byte stream."""
    data = text.encode()
    decoder = codecs.getincrementaldecoder("utf-8")()
    chunks, pos = [], 0
    while pos < len(data):
        size = rng.randint(1, 4)
        chunks.append(decoder.decode(data[pos : pos + size]))
        pos += size
    chunks.append(decoder.decode(b"", final=True))
    return chunks


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.key)
async def test_case_whole_and_streamed(case: CorpusCase) -> None:
    want = expected(case)

    assert await whole(case) == want
    for name, chunks in chunkings(case.output):
        assert "".join(chunks) == case.output
        assert await streamed(case, chunks) == want, name


def test_corpus_is_large_cites_its_sources_and_covers_every_format() -> None:
    assert len(CASES) >= MIN_CASES
    assert len({c.key for c in CASES}) == len(CASES)
    per_format = Counter(c.format for c in CASES)
    assert set(per_format) == set(FORMATS)
    for case in CASES:
        source = case.source
        assert source.get("url") or (source.get("repository") and source.get("path")), case.key
        assert case.rule is None or case.rule in RULES, case.key
        assert set(case.tools) >= {name for name, _ in case.calls}, case.key
