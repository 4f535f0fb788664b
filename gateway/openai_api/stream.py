"""Canonical stream events as OpenAI ``chat.completion.chunk`` server-sent events."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

import orjson

from gateway.errors import error_body, gateway_error_body
from gateway.openai_api.convert import usage_json
from llm_service.errors import GatewayError
from llm_service.types import (
    StreamDone,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    Usage,
)

JSON = dict[str, Any]
DONE = b"data: [DONE]\n\n"


def sse(payload: JSON) -> bytes:
    return b"data: " + orjson.dumps(payload) + b"\n\n"


class ChunkWriter:
    def __init__(self, completion_id: str, model: str) -> None:
        self._base: JSON = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
        }
        # Per streamed call index: whether any argument text was sent for it.
        self._has_arguments: dict[int, bool] = {}

    def chunk(self, delta: JSON, finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
        return sse({**self._base, "choices": [choice]})

    def event(self, event: TextDelta | ThinkingDelta | ToolCallDelta) -> bytes:
        if isinstance(event, ToolCallDelta):
            sent = self._has_arguments.get(event.index, False)
            self._has_arguments[event.index] = sent or bool(event.arguments)
        return self.chunk(_delta(event))

    def empty_arguments(self) -> list[bytes]:
        """``{}`` for every call that got no argument text, as a whole reply gives.

        Providers stream a call without arguments as nothing (Anthropic: one empty
        ``input_json_delta``); callers join the pieces and parse them, and ``""`` is not JSON.
        """
        return [
            self.chunk({"tool_calls": [{"index": index, "function": {"arguments": "{}"}}]})
            for index, sent in self._has_arguments.items()
            if not sent
        ]

    def usage(self, usage: Usage) -> bytes:
        return sse({**self._base, "choices": [], "usage": usage_json(usage)})


def _delta(event: TextDelta | ThinkingDelta | ToolCallDelta) -> JSON:
    if isinstance(event, TextDelta):
        return {"content": event.text}
    if isinstance(event, ThinkingDelta):
        return {"reasoning_content": event.text}
    call: JSON = {"index": event.index, "function": {"arguments": event.arguments}}
    if event.id is not None:
        call["id"] = event.id
        call["type"] = "function"
    if event.name is not None:
        call["function"]["name"] = event.name
    return {"tool_calls": [call]}


async def openai_sse(
    first: StreamEvent,
    rest: AsyncGenerator[StreamEvent, None],
    *,
    writer: ChunkWriter,
    include_usage: bool,
    on_done: Callable[[StreamDone], None],
    on_error: Callable[[GatewayError], None],
) -> AsyncIterator[bytes]:
    """The SSE body. Errors after the first byte end the stream with an error event."""
    yield writer.chunk({"role": "assistant", "content": ""})
    event: StreamEvent | None = first
    try:
        while event is not None:
            if isinstance(event, StreamDone):
                on_done(event)
                for chunk in writer.empty_arguments():
                    yield chunk
                yield writer.chunk({}, event.response.finish_reason)
                if include_usage:
                    yield writer.usage(event.response.usage)
                yield DONE
                return
            yield writer.event(event)
            event = await anext(rest, None)
    except GatewayError as exc:
        on_error(exc)
        yield sse(gateway_error_body(exc))
        return
    finally:
        await rest.aclose()
    # The upstream ended without its final event: say so rather than close silently.
    yield sse(error_body("The upstream stream ended unexpectedly.", "upstream_error"))
