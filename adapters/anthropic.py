"""Anthropic Messages API through the official SDK."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import anthropic
from anthropic.types import (
    Message,
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    RawMessageDeltaEvent,
    RawMessageStartEvent,
    RawMessageStopEvent,
    RawMessageStreamEvent,
)

from adapters.anthropic_format import request_body
from adapters.naming import ToolNames, for_wire, request_names
from llm_service.assemble import StreamAssembler, finish_reason, tool_call
from llm_service.config import ModelConfig
from llm_service.errors import (
    UpstreamConnectionError,
    UpstreamError,
    UpstreamProtocolError,
    UpstreamQuotaExceeded,
    UpstreamTimeout,
    error_for_status,
    parse_retry_after,
)
from llm_service.types import (
    AssistantMessage,
    ChatRequest,
    ChatResponse,
    FinishReason,
    StreamDone,
    StreamEvent,
    TextDelta,
    Thinking,
    ThinkingDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)

PROVIDER = "anthropic"
_STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}
# An error event inside a 200 stream carries only its type: this is the status it stands for.
_STATUS_BY_ERROR_TYPE = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}
_SPEND_LIMIT_CODES = frozenset(
    {
        "enforced_spend_limit_reached",
        "contract_spend_limit_reached",
        "linked_organization_spend_limit_reached",
    }
)


class AnthropicAdapter:
    provider = PROVIDER

    def __init__(self, config: ModelConfig, api_key: str | None) -> None:
        self._config = config
        timeout = anthropic.Timeout(
            config.timeouts.read, connect=config.timeouts.connect, pool=config.timeouts.connect
        )
        # The gateway is the only retry layer: SDK retries would multiply upstream load.
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key or "not-needed",
            base_url=config.base_url,
            timeout=timeout,
            max_retries=0,
        )

    def _body(self, request: ChatRequest, names: ToolNames) -> dict[str, Any]:
        wire = for_wire(request, names, "anthropic")
        return request_body(wire, self._config.upstream_model, self._config.max_tokens)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        names = request_names(request)
        body = self._body(request, names)
        with _mapped_errors():
            message: Message = await self._client.messages.create(**body)
        return _signed_by(_parse_message(message, names), self._config.upstream_model)

    async def stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        names = request_names(request)
        body = self._body(request, names)
        state = _StreamState(names=names, model=self._config.upstream_model)
        with _mapped_errors():
            events = await self._client.messages.create(**body, stream=True)
        # Only the SDK's reading of the stream is mapped: what we make of an event is ours.
        async for event in _read(events):
            for delta in state.handle(event):
                yield delta
        if not state.stopped:
            raise UpstreamProtocolError(
                "anthropic's stream ended before message_stop", provider=PROVIDER
            )
        yield StreamDone(_signed_by(state.response(), self._config.upstream_model))

    async def probe(self) -> str | None:
        return None

    async def aclose(self) -> None:
        await self._client.close()


def _parse_message(message: Message, names: ToolNames) -> ChatResponse:
    text: list[str] = []
    thinking: list[Thinking] = []
    calls: list[ToolCall] = []
    for block in message.content:
        if block.type == "text":
            text.append(block.text)
        elif block.type == "thinking":
            thinking.append(Thinking(block.thinking, signature=block.signature))
        elif block.type == "redacted_thinking":
            thinking.append(Thinking(block.data, redacted=True))
        elif block.type == "tool_use":
            calls.append(tool_call(block.id, names.canonical(block.name), _input(block.input)))
    reason = _STOP_REASONS.get(message.stop_reason or "end_turn", "stop")
    return ChatResponse(
        message=AssistantMessage(
            content="".join(text) or None, tool_calls=tuple(calls), thinking=tuple(thinking)
        ),
        finish_reason=finish_reason(reason, bool(calls)),
        usage=_usage(message.usage.input_tokens, message.usage, message.usage.output_tokens),
        model=message.model,
    )


def _signed_by(response: ChatResponse, model: str) -> ChatResponse:
    """Thinking marked with the model it was asked of: only that model takes it back."""
    message = response.message
    if not message.thinking:
        return response
    thinking = tuple(replace(t, model=model) for t in message.thinking)
    return replace(response, message=replace(message, thinking=thinking))


def _input(value: object) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def _usage(input_tokens: int | None, usage: object, output_tokens: int) -> Usage:
    """Prompt tokens include cached ones: callers compare them with other providers' totals."""
    read = getattr(usage, "cache_read_input_tokens", None) or 0
    written = getattr(usage, "cache_creation_input_tokens", None) or 0
    return Usage(
        (input_tokens or 0) + read + written,
        output_tokens,
        cached_tokens=read,
        cache_write_tokens=written,
    )


@dataclass
class _StreamState:
    """Turns raw stream events into deltas; tool blocks get dense tool-call indexes."""

    names: ToolNames
    model: str
    assembler: StreamAssembler = field(default_factory=StreamAssembler)
    tool_index: dict[int, int] = field(default_factory=dict)
    thinking: dict[int, Thinking] = field(default_factory=dict)
    reason: FinishReason = "stop"
    usage: Usage = field(default_factory=Usage)
    stopped: bool = False

    def handle(self, event: RawMessageStreamEvent) -> Iterator[StreamEvent]:
        if isinstance(event, RawMessageStartEvent):
            self.model = event.message.model or self.model
            usage = event.message.usage
            self.usage = _usage(usage.input_tokens, usage, usage.output_tokens)
        elif isinstance(event, RawContentBlockStartEvent):
            yield from self._start(event)
        elif isinstance(event, RawContentBlockDeltaEvent):
            yield from self._delta(event)
        elif isinstance(event, RawMessageDeltaEvent):
            if event.delta.stop_reason:
                self.reason = _STOP_REASONS.get(event.delta.stop_reason, "stop")
            self.usage = replace(self.usage, completion_tokens=event.usage.output_tokens)
        elif isinstance(event, RawMessageStopEvent):
            self.stopped = True

    def _start(self, event: RawContentBlockStartEvent) -> Iterator[StreamEvent]:
        block = event.content_block
        if block.type == "tool_use":
            index = self.tool_index[event.index] = len(self.tool_index)
            yield self._record(
                ToolCallDelta(index=index, id=block.id, name=self.names.canonical(block.name))
            )
        elif block.type == "text" and block.text:
            yield self._record(TextDelta(block.text))
        elif block.type == "thinking":
            self.thinking[event.index] = Thinking(block.thinking, signature=block.signature)
            if block.thinking:
                yield self._record(ThinkingDelta(block.thinking))
        elif block.type == "redacted_thinking":
            self.thinking[event.index] = Thinking(block.data, redacted=True)

    def _delta(self, event: RawContentBlockDeltaEvent) -> Iterator[StreamEvent]:
        delta = event.delta
        if delta.type == "text_delta":
            yield self._record(TextDelta(delta.text))
        elif delta.type == "input_json_delta":
            # An empty partial_json is legal (a call without arguments): it adds nothing.
            if delta.partial_json and event.index in self.tool_index:
                index = self.tool_index[event.index]
                yield self._record(ToolCallDelta(index=index, arguments=delta.partial_json))
        elif delta.type == "thinking_delta":
            block = self.thinking.get(event.index, Thinking(""))
            self.thinking[event.index] = replace(block, text=block.text + delta.thinking)
            yield ThinkingDelta(delta.thinking)
        elif delta.type == "signature_delta":
            block = self.thinking.get(event.index, Thinking(""))
            self.thinking[event.index] = replace(block, signature=delta.signature)
            yield ThinkingDelta("", signature=delta.signature)

    def _record(self, event: TextDelta | ThinkingDelta | ToolCallDelta) -> StreamEvent:
        if isinstance(event, TextDelta):
            self.assembler.add_text(event.text)
        elif isinstance(event, ToolCallDelta):
            self.assembler.add_tool_call(event)
        return event

    def response(self) -> ChatResponse:
        assembled = self.assembler.finish(self.reason, self.usage, self.model)
        blocks = tuple(block for _, block in sorted(self.thinking.items()))
        return replace(assembled, message=replace(assembled.message, thinking=blocks))


async def _read(
    events: AsyncIterator[RawMessageStreamEvent],
) -> AsyncIterator[RawMessageStreamEvent]:
    """The SDK's stream events, its failures mapped; the yield is outside the mapping."""
    while True:
        with _mapped_errors():
            event = await anext(events, None)
        if event is None:
            return
        yield event


@contextmanager
def _mapped_errors() -> Iterator[None]:
    """The SDK's and the wire's failures, by type; around SDK calls only, so a failure of ours
    is not charged to Anthropic (the router reports it as an internal error)."""
    try:
        yield
    except anthropic.APIStatusError as exc:
        raise _status_error(exc) from exc
    except anthropic.APITimeoutError as exc:
        raise UpstreamTimeout("anthropic did not answer in time", provider=PROVIDER) from exc
    except anthropic.APIConnectionError as exc:
        raise UpstreamConnectionError(f"cannot reach anthropic: {exc}", provider=PROVIDER) from exc
    # The SDK decodes a body (whole, or a stream event's data) with json.loads.
    except (anthropic.APIResponseValidationError, json.JSONDecodeError) as exc:
        raise UpstreamProtocolError(
            f"anthropic answered with a malformed body: {exc}", provider=PROVIDER
        ) from exc


def _status_error(exc: anthropic.APIStatusError) -> UpstreamError:
    """By status and the structured error type/code: never by message text."""
    error_type = exc.type if isinstance(exc.type, str) else None
    status = exc.status_code
    if status < 400:  # an error event inside a stream that started with 200
        status = _STATUS_BY_ERROR_TYPE.get(error_type or "", 500)
    if error_type == "overloaded_error":
        status = 529
    message = exc.api_message or exc.message
    if error_type == "billing_error" or exc.error_code in _SPEND_LIMIT_CODES:
        return UpstreamQuotaExceeded(
            f"anthropic answered {status}: {message}", provider=PROVIDER, upstream_status=status
        )
    return error_for_status(
        status,
        message,
        provider=PROVIDER,
        retry_after=parse_retry_after(exc.response.headers.get("retry-after")),
    )
