"""Canonical stream events become the exact Anthropic SSE sequence, errors included."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any

from gateway.anthropic_api.stream import MessageWriter
from gateway.chat_route import event_stream
from gateway.context import RequestContext
from llm_service.errors import GatewayError, UpstreamRateLimited
from llm_service.types import (
    AssistantMessage,
    ChatResponse,
    StreamDone,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)

DONE = StreamDone(
    ChatResponse(
        message=AssistantMessage(
            content="Let me look.",
            tool_calls=(ToolCall("call_1", "search", {"q": "x"}), ToolCall("call_2", "now", {})),
        ),
        finish_reason="tool_calls",
        usage=Usage(prompt_tokens=20, completion_tokens=8),
        model="upstream",
    )
)


async def _events(
    *events: StreamEvent, fail: GatewayError | None = None
) -> AsyncGenerator[StreamEvent, None]:
    for event in events:
        yield event
    if fail is not None:
        raise fail


async def _sse(
    *events: StreamEvent, fail: GatewayError | None = None
) -> tuple[list[tuple[str, dict[str, Any]]], RequestContext]:
    context = RequestContext("req_1")
    stream = _events(*events, fail=fail)
    first = await anext(stream)
    writer = MessageWriter("msg_1", "alias")
    body = b"".join([chunk async for chunk in event_stream(first, stream, writer, context)])
    parsed = []
    for frame in body.decode().split("\n\n"):
        if frame:
            event_line, data_line = frame.split("\n")
            data = json.loads(data_line.removeprefix("data: "))
            assert event_line == f"event: {data['type']}"
            parsed.append((data["type"], data))
    return parsed, context


async def test_thinking_text_and_parallel_tool_calls_become_blocks_in_order() -> None:
    events, context = await _sse(
        ThinkingDelta("hmm "),
        ThinkingDelta("ok"),
        TextDelta("Let me "),
        TextDelta("look."),
        ToolCallDelta(0, id="call_1", name="search", arguments='{"q"'),
        ToolCallDelta(0, arguments=': "x"}'),
        ToolCallDelta(1, id="call_2", name="now", arguments=""),
        DONE,
    )

    assert [name for name, _ in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    start = events[0][1]["message"]
    assert (start["id"], start["model"], start["role"], start["content"]) == (
        "msg_1",
        "alias",
        "assistant",
        [],
    )
    starts = [data for name, data in events if name == "content_block_start"]
    assert [(s["index"], s["content_block"]) for s in starts] == [
        (0, {"type": "thinking", "thinking": "", "signature": ""}),
        (1, {"type": "text", "text": ""}),
        (2, {"type": "tool_use", "id": "call_1", "name": "search", "input": {}}),
        (3, {"type": "tool_use", "id": "call_2", "name": "now", "input": {}}),
    ]
    deltas = [(d["index"], d["delta"]) for name, d in events if name == "content_block_delta"]
    assert deltas == [
        (0, {"type": "thinking_delta", "thinking": "hmm "}),
        (0, {"type": "thinking_delta", "thinking": "ok"}),
        (1, {"type": "text_delta", "text": "Let me "}),
        (1, {"type": "text_delta", "text": "look."}),
        (2, {"type": "input_json_delta", "partial_json": '{"q"'}),
        (2, {"type": "input_json_delta", "partial_json": ': "x"}'}),
        (3, {"type": "input_json_delta", "partial_json": ""}),
    ]
    stops = [d["index"] for name, d in events if name == "content_block_stop"]
    assert stops == [0, 1, 2, 3]
    assert events[-2][1]["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}
    assert events[-2][1]["usage"] == {
        "input_tokens": 20,
        "output_tokens": 8,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    assert context.usage == DONE.response.usage
    assert context.error_type is None


async def test_a_late_piece_of_an_earlier_call_goes_to_that_calls_block() -> None:
    events, _ = await _sse(
        ToolCallDelta(0, id="a", name="one", arguments="{"),
        ToolCallDelta(1, id="b", name="two", arguments="{}"),
        ToolCallDelta(0, arguments="}"),
        DONE,
    )

    deltas = [
        (d["index"], d["delta"]["partial_json"]) for n, d in events if n == "content_block_delta"
    ]
    assert deltas == [(0, "{"), (1, "{}"), (0, "}")]


async def test_failure_mid_stream_ends_with_an_anthropic_error_event() -> None:
    failure = UpstreamRateLimited("openai answered 429: slow down", provider="openai")

    events, context = await _sse(TextDelta("Hel"), fail=failure)

    assert [name for name, _ in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "error",
    ]
    assert events[-1][1] == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "openai answered 429: slow down"},
    }
    assert context.usage is None
    assert (context.error_type, context.upstream_error) == (
        "rate_limit_error",
        "UpstreamRateLimited",
    )


async def test_stream_ending_without_its_final_event_says_so() -> None:
    events, context = await _sse(TextDelta("Hel"))

    assert events[-1][0] == "error"
    assert events[-1][1]["error"]["type"] == "api_error"
    assert context.usage is None
    # Counted as the upstream failure it is (the upstream-errors metric, the log's error type).
    assert (context.error_type, context.upstream_error) == ("api_error", "UpstreamProtocolError")
