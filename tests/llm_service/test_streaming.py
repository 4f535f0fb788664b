"""The shared skeleton: one parse, folded the same whether the reply came whole or streamed."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator
from dataclasses import replace

import pytest

from llm_service.errors import UpstreamProtocolError
from llm_service.streaming import (
    AnsweredBy,
    Finished,
    RedactedThinking,
    ReplyEvent,
    ReplyFold,
    ThinkingEnd,
    response_events,
    stream_reply,
    whole_reply,
)
from llm_service.types import (
    ChatResponse,
    StreamDone,
    StreamEvent,
    TextDelta,
    Thinking,
    ThinkingDelta,
    ToolCallDelta,
    Usage,
)

# A toy provider whose chunks are lists of events: the parse is the identity.
CHUNKS: list[list[ReplyEvent]] = [
    [AnsweredBy("model-v2"), ThinkingDelta("Let me "), ThinkingDelta("think.")],
    [ThinkingEnd("sig-1"), RedactedThinking("opaque"), TextDelta("Hi")],
    [ToolCallDelta(1, "b", "second", '{"x"'), ToolCallDelta(0, "a", "first", "")],
    [ToolCallDelta(1, arguments=": 2}"), Usage(3, 4), Finished("stop")],
    [Usage(3, 5)],  # usage after the finish, as OpenAI's include_usage sends it
]


def parse(chunk: list[ReplyEvent]) -> Iterator[ReplyEvent]:
    yield from chunk


async def _chunks(
    chunks: list[list[ReplyEvent]], closed: list[bool]
) -> AsyncGenerator[list[ReplyEvent], None]:
    try:
        for chunk in chunks:
            yield chunk
    finally:
        closed.append(True)


async def _streamed(chunks: list[list[ReplyEvent]]) -> list[StreamEvent]:
    closed: list[bool] = []
    events = stream_reply(lambda: _chunks(chunks, closed), parse, provider="toy", model="m")
    out = [event async for event in events]
    assert closed == [True]
    return out


def test_the_fold_keeps_every_part_of_the_reply() -> None:
    response = whole_reply(CHUNKS, parse, provider="toy", model="m")

    message = response.message
    assert message.content == "Hi"
    assert message.thinking == (
        Thinking("Let me think.", signature="sig-1"),
        Thinking("opaque", redacted=True),
    )
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        ("a", "first", {}),
        ("b", "second", {"x": 2}),
    ]
    assert response.finish_reason == "tool_calls"
    assert response.usage == Usage(3, 5)
    assert response.model == "model-v2"


async def test_a_stream_passes_on_only_deltas_and_ends_with_the_same_reply() -> None:
    events = await _streamed(CHUNKS)

    *deltas, done = events
    assert all(isinstance(e, TextDelta | ThinkingDelta | ToolCallDelta) for e in deltas)
    assert isinstance(done, StreamDone)
    assert done.response == whole_reply(CHUNKS, parse, provider="toy", model="m")


async def test_a_reply_the_provider_did_not_finish_is_cut() -> None:
    unfinished = CHUNKS[:3]

    with pytest.raises(UpstreamProtocolError, match="stream ended before"):
        await _streamed(unfinished)
    with pytest.raises(UpstreamProtocolError, match="without a finished reply"):
        whole_reply(unfinished, parse, provider="toy", model="m")


async def test_the_request_is_built_on_the_first_read_and_the_upstream_closed_early() -> None:
    opened: list[bool] = []
    closed: list[bool] = []

    def open_chunks() -> AsyncGenerator[list[ReplyEvent], None]:
        opened.append(True)
        return _chunks(CHUNKS, closed)

    events = stream_reply(open_chunks, parse, provider="toy", model="m")
    assert opened == []
    first = await anext(events)
    await events.aclose()  # the caller went away

    assert first == ThinkingDelta("Let me ")
    assert (opened, closed) == ([True], [True])


def test_thinking_without_an_end_is_one_block_and_a_stop_sequence_is_kept() -> None:
    fold = ReplyFold("m")
    for event in (ThinkingDelta("a"), TextDelta("x"), ThinkingDelta("b"), Finished("stop", "##")):
        fold.add(event)

    response = fold.response()

    assert response.message.thinking == (Thinking("ab"),)
    assert (response.finish_reason, response.stop_sequence) == ("stop", "##")


def test_a_whole_response_reads_back_as_its_events() -> None:
    response = whole_reply(CHUNKS, parse, provider="toy", model="m")

    events = list(response_events(response))

    assert events[-1] == StreamDone(response)
    assert [type(e).__name__ for e in events[:-1]] == [
        "ThinkingDelta",
        "TextDelta",
        "ToolCallDelta",
        "ToolCallDelta",
    ]
    assert events[3] == ToolCallDelta(1, "b", "second", '{"x":2}')


async def test_the_adapters_last_touch_applies_to_both_paths() -> None:
    def mark(response: ChatResponse) -> ChatResponse:
        return replace(response, model=f"{response.model} (marked)")

    whole = whole_reply(CHUNKS, parse, provider="toy", model="m", finish=mark)
    closed: list[bool] = []
    events = stream_reply(
        lambda: _chunks(CHUNKS, closed), parse, provider="toy", model="m", finish=mark
    )
    done = [e async for e in events][-1]

    assert whole.model == "model-v2 (marked)"
    assert done == StreamDone(whole)
