"""Canonical stream events as the Anthropic Messages server-sent event sequence.

``message_start``, then per content block ``content_block_start`` / ``content_block_delta``... /
``content_block_stop`` (thinking, text and tool_use blocks in the order the model produced them),
then ``message_delta`` with the stop reason and usage, then ``message_stop``.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from gateway.anthropic_api.convert import stop_json
from gateway.anthropic_api.errors import anthropic_error_body, gateway_error_body
from llm_service.errors import GatewayError
from llm_service.types import (
    ChatResponse,
    StreamDone,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
)

JSON = dict[str, Any]


def sse(event: str, payload: JSON) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"


def _event(payload: JSON) -> bytes:
    return sse(payload["type"], payload)


@dataclass
class BlockWriter:
    """Opens, fills and closes content blocks; a change of kind closes the open block.

    A block is keyed by what it holds: ``"thinking"``, ``"text"``, or a tool call's index.
    """

    open_key: str | int | None = None
    count: int = 0
    tool_blocks: dict[int, int] = field(default_factory=dict)

    def delta(self, event: TextDelta | ThinkingDelta | ToolCallDelta) -> list[bytes]:
        if isinstance(event, TextDelta):
            delta = {"type": "text_delta", "text": event.text}
            return self._into("text", {"type": "text", "text": ""}, delta)
        if isinstance(event, ThinkingDelta):
            start = {"type": "thinking", "thinking": "", "signature": ""}
            return self._into("thinking", start, {"type": "thinking_delta", "thinking": event.text})
        return self._tool(event)

    def close(self) -> list[bytes]:
        if self.open_key is None:
            return []
        self.open_key = None
        return [_event({"type": "content_block_stop", "index": self.count - 1})]

    def _into(self, key: str | int, start: JSON, delta: JSON) -> list[bytes]:
        out: list[bytes] = []
        if self.open_key != key:
            out = self.close()
            self.open_key = key
            self.count += 1
            out.append(
                _event(
                    {"type": "content_block_start", "index": self.count - 1, "content_block": start}
                )
            )
        out.append(_event({"type": "content_block_delta", "index": self.count - 1, "delta": delta}))
        return out

    def _tool(self, event: ToolCallDelta) -> list[bytes]:
        delta = {"type": "input_json_delta", "partial_json": event.arguments}
        block = self.tool_blocks.get(event.index)
        if block is not None and self.open_key != event.index:
            # A piece of a call whose block is already closed (providers interleaving calls):
            # its block index still tells the client where it belongs.
            return [_event({"type": "content_block_delta", "index": block, "delta": delta})]
        start = {
            "type": "tool_use",
            "id": event.id or f"toolu_{uuid.uuid4().hex[:24]}",
            "name": event.name or "",
            "input": {},
        }
        out = self._into(event.index, start, delta)
        self.tool_blocks[event.index] = self.count - 1
        return out


def message_start(message_id: str, model: str) -> bytes:
    message: JSON = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        # Most providers count input tokens only at the end; message_delta carries both.
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }
    return _event({"type": "message_start", "message": message})


def message_end(response: ChatResponse) -> list[bytes]:
    usage = response.usage
    delta = {
        "type": "message_delta",
        "delta": stop_json(response),
        "usage": {"input_tokens": usage.prompt_tokens, "output_tokens": usage.completion_tokens},
    }
    return [_event(delta), _event({"type": "message_stop"})]


async def anthropic_sse(
    first: StreamEvent,
    rest: AsyncGenerator[StreamEvent, None],
    *,
    message_id: str,
    model: str,
    on_done: Callable[[StreamDone], None],
    on_error: Callable[[GatewayError], None],
) -> AsyncIterator[bytes]:
    """The SSE body. Errors after the first byte end the stream with an ``error`` event."""
    yield message_start(message_id, model)
    blocks = BlockWriter()
    event: StreamEvent | None = first
    try:
        while event is not None:
            if isinstance(event, StreamDone):
                on_done(event)
                for chunk in [*blocks.close(), *message_end(event.response)]:
                    yield chunk
                return
            for chunk in blocks.delta(event):
                yield chunk
            event = await anext(rest, None)
    except GatewayError as exc:
        on_error(exc)
        yield sse("error", gateway_error_body(exc))
        return
    finally:
        await rest.aclose()
    # The upstream ended without its final event: say so rather than close silently.
    yield sse("error", anthropic_error_body("api_error", "The upstream stream ended unexpectedly."))
