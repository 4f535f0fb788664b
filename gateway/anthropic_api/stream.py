"""Canonical stream events as the Anthropic Messages server-sent event sequence.

``message_start``, then per content block ``content_block_start`` / ``content_block_delta``... /
``content_block_stop`` (thinking, text and tool_use blocks in the order the model produced them),
then ``message_delta`` with the stop reason and usage, then ``message_stop``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import orjson

from gateway.anthropic_api.convert import stop_json, usage_json
from gateway.anthropic_api.errors import (
    anthropic_error_body,
    anthropic_error_type,
    gateway_error_body,
)
from gateway.errors import report_of
from gateway.sse import frame
from llm_service.errors import GatewayError
from llm_service.types import JSON, ChatResponse, TextDelta, ThinkingDelta, ToolCallDelta


def _event(payload: JSON) -> bytes:
    return frame(orjson.dumps(payload), payload["type"])


@dataclass
class MessageWriter:
    """One message's events (a ``gateway.chat_route.StreamEncoder``).

    Content blocks are opened, filled and closed as the deltas come; a change of kind closes the
    open block. A block is keyed by what it holds: ``"thinking"``, ``"text"``, or a tool call's
    index.
    """

    message_id: str
    model: str
    open_key: str | int | None = None
    count: int = 0
    tool_blocks: dict[int, int] = field(default_factory=dict)

    def start(self) -> bytes:
        message: JSON = {
            "id": self.message_id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            # Most providers count input tokens only at the end; message_delta carries both.
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
        return _event({"type": "message_start", "message": message})

    def delta(self, event: TextDelta | ThinkingDelta | ToolCallDelta) -> bytes:
        if isinstance(event, TextDelta):
            delta = {"type": "text_delta", "text": event.text}
            return self._into("text", {"type": "text", "text": ""}, delta)
        if isinstance(event, ThinkingDelta):
            start = {"type": "thinking", "thinking": "", "signature": ""}
            if event.signature is not None:
                # Closes the block's deltas, as Anthropic sends it: the caller hands it back.
                delta = {"type": "signature_delta", "signature": event.signature}
                return self._into("thinking", start, delta) + self._close()
            return self._into("thinking", start, {"type": "thinking_delta", "thinking": event.text})
        return self._tool(event)

    def done(self, response: ChatResponse) -> bytes:
        delta = {
            "type": "message_delta",
            "delta": stop_json(response),
            "usage": usage_json(response.usage),
        }
        return self._close() + _event(delta) + _event({"type": "message_stop"})

    def error(self, exc: GatewayError) -> bytes:
        return frame(orjson.dumps(gateway_error_body(exc)), "error")

    def error_type(self, exc: GatewayError) -> str:
        report = report_of(exc)
        return anthropic_error_type(report.status, report.code)

    def cut(self) -> bytes:
        body = anthropic_error_body("api_error", "The upstream stream ended unexpectedly.")
        return frame(orjson.dumps(body), "error")

    def _close(self) -> bytes:
        if self.open_key is None:
            return b""
        self.open_key = None
        return _event({"type": "content_block_stop", "index": self.count - 1})

    def _into(self, key: str | int, start: JSON, delta: JSON) -> bytes:
        opened = b""
        if self.open_key != key:
            opened = self._close()
            self.open_key = key
            self.count += 1
            opened += _event(
                {"type": "content_block_start", "index": self.count - 1, "content_block": start}
            )
        return opened + _event(
            {"type": "content_block_delta", "index": self.count - 1, "delta": delta}
        )

    def _tool(self, event: ToolCallDelta) -> bytes:
        delta = {"type": "input_json_delta", "partial_json": event.arguments}
        block = self.tool_blocks.get(event.index)
        if block is not None and self.open_key != event.index:
            # A piece of a call whose block is already closed (providers interleaving calls):
            # its block index still tells the client where it belongs.
            return _event({"type": "content_block_delta", "index": block, "delta": delta})
        start = {
            "type": "tool_use",
            "id": event.id or f"toolu_{uuid.uuid4().hex[:24]}",
            "name": event.name or "",
            "input": {},
        }
        out = self._into(event.index, start, delta)
        self.tool_blocks[event.index] = self.count - 1
        return out
