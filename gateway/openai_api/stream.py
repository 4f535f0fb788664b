"""Canonical stream events as OpenAI ``chat.completion.chunk`` server-sent events."""

from __future__ import annotations

import time

import orjson

from gateway.errors import error_body, gateway_error_body, report_of
from gateway.openai_api.convert import usage_json
from gateway.sse import frame
from llm_service.errors import GatewayError
from llm_service.types import JSON, ChatResponse, TextDelta, ThinkingDelta, ToolCallDelta

DONE = frame(b"[DONE]")


class ChunkWriter:
    """One completion's chunks (a ``gateway.chat_route.StreamEncoder``), ending in ``[DONE]``."""

    def __init__(self, completion_id: str, model: str, include_usage: bool) -> None:
        self._base: JSON = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
        }
        self._include_usage = include_usage
        # Per streamed call index: whether any argument text was sent for it.
        self._has_arguments: dict[int, bool] = {}

    def chunk(self, delta: JSON, finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
        return frame(orjson.dumps({**self._base, "choices": [choice]}))

    def start(self) -> bytes:
        return self.chunk({"role": "assistant", "content": ""})

    def delta(self, event: TextDelta | ThinkingDelta | ToolCallDelta) -> bytes:
        if isinstance(event, ThinkingDelta) and not event.text:
            return b""  # a signature only: OpenAI's wire has no place for it
        if isinstance(event, ToolCallDelta):
            sent = self._has_arguments.get(event.index, False)
            self._has_arguments[event.index] = sent or bool(event.arguments)
        # ``chunk`` inlined: this runs for every chunk of every stream.
        choice = {"index": 0, "delta": _delta(event), "finish_reason": None, "logprobs": None}
        return frame(orjson.dumps({**self._base, "choices": [choice]}))

    def done(self, response: ChatResponse) -> bytes:
        end = b"".join(self._empty_arguments()) + self.chunk({}, response.finish_reason)
        if self._include_usage:
            usage = {**self._base, "choices": [], "usage": usage_json(response.usage)}
            end += frame(orjson.dumps(usage))
        return end + DONE

    def _empty_arguments(self) -> list[bytes]:
        """``{}`` for every call that got no argument text, as a whole reply gives.

        Providers stream a call without arguments as nothing (Anthropic: one empty
        ``input_json_delta``); callers join the pieces and parse them, and ``""`` is not JSON.
        """
        return [
            self.chunk({"tool_calls": [{"index": index, "function": {"arguments": "{}"}}]})
            for index, sent in self._has_arguments.items()
            if not sent
        ]

    def error(self, exc: GatewayError) -> bytes:
        return frame(orjson.dumps(gateway_error_body(exc)))

    def error_type(self, exc: GatewayError) -> str:
        return report_of(exc).error_type

    def cut(self) -> bytes:
        body = error_body("The upstream stream ended unexpectedly.", "upstream_error")
        return frame(orjson.dumps(body))


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
