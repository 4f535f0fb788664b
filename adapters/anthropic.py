"""Anthropic Messages API through the official SDK."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from typing import Any

import anthropic
from anthropic.types import (
    Message,
    MessageDeltaUsage,
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    RawContentBlockStopEvent,
    RawMessageDeltaEvent,
    RawMessageStartEvent,
    RawMessageStopEvent,
    RawMessageStreamEvent,
)
from anthropic.types.raw_message_delta_event import Delta

from adapters.anthropic_format import request_body
from adapters.naming import ToolNames, for_wire, request_names
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
from llm_service.streaming import (
    AnsweredBy,
    Finished,
    RedactedThinking,
    ReplyEvent,
    ThinkingEnd,
    stream_reply,
    whole_reply,
)
from llm_service.types import (
    ChatRequest,
    ChatResponse,
    FinishReason,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
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
        model = self._config.upstream_model
        return whole_reply(
            replayed(message),
            ReplyParser(names),
            provider=PROVIDER,
            model=model,
            finish=partial(_signed_by, model=model),
        )

    def stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        names = request_names(request)
        model = self._config.upstream_model
        return stream_reply(
            partial(self._events, request, names),
            ReplyParser(names),
            provider=PROVIDER,
            model=model,
            finish=partial(_signed_by, model=model),
        )

    async def _events(
        self, request: ChatRequest, names: ToolNames
    ) -> AsyncGenerator[RawMessageStreamEvent, None]:
        """The SDK's stream events, its failures mapped; the yield is outside the mapping, so
        what we make of an event is ours."""
        body = self._body(request, names)
        with _mapped_errors():
            events = await self._client.messages.create(**body, stream=True)
        while True:
            with _mapped_errors():
                event = await anext(events, None)
            if event is None:
                return
            yield event

    async def probe(self) -> str | None:
        return None

    async def aclose(self) -> None:
        await self._client.close()


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


def replayed(message: Message) -> Iterator[RawMessageStreamEvent]:
    """A whole message as the stream that would have carried it: each block starts holding all
    of its content (as a stream's block start holds what it already knows), and stops."""
    yield RawMessageStartEvent.model_construct(type="message_start", message=message)
    for index, block in enumerate(message.content):
        yield RawContentBlockStartEvent.model_construct(
            type="content_block_start", index=index, content_block=block
        )
        yield RawContentBlockStopEvent.model_construct(type="content_block_stop", index=index)
    delta = Delta.model_construct(
        stop_reason=message.stop_reason, stop_sequence=message.stop_sequence
    )
    usage = MessageDeltaUsage.model_construct(output_tokens=message.usage.output_tokens)
    yield RawMessageDeltaEvent.model_construct(type="message_delta", delta=delta, usage=usage)
    yield RawMessageStopEvent.model_construct(type="message_stop")


class ReplyParser:
    """A message's events, from its stream's events (or a whole message's replay).

    Tool blocks get dense tool-call indexes; a thinking block ends with its signature.
    """

    def __init__(self, names: ToolNames) -> None:
        self._names = names
        self._tool_index: dict[int, int] = {}
        self._signatures: dict[int, str] = {}  # open thinking blocks, by block index
        self._reason: Finished = Finished("stop")
        self._usage = Usage()

    def __call__(self, event: RawMessageStreamEvent) -> Iterator[ReplyEvent]:
        if isinstance(event, RawContentBlockDeltaEvent):
            yield from self._delta(event)
        elif isinstance(event, RawContentBlockStartEvent):
            yield from self._start(event)
        elif isinstance(event, RawContentBlockStopEvent):
            signature = self._signatures.pop(event.index, None)
            if signature is not None:
                yield ThinkingEnd(signature)
        elif isinstance(event, RawMessageStartEvent):
            yield AnsweredBy(event.message.model)
            usage = event.message.usage
            self._usage = _usage(usage.input_tokens, usage, usage.output_tokens)
            yield self._usage
        elif isinstance(event, RawMessageDeltaEvent):
            if event.delta.stop_reason:
                reason = _STOP_REASONS.get(event.delta.stop_reason, "stop")
                self._reason = Finished(reason, event.delta.stop_sequence)
            self._usage = replace(self._usage, completion_tokens=event.usage.output_tokens)
            yield self._usage
        elif isinstance(event, RawMessageStopEvent):
            yield self._reason

    def _start(self, event: RawContentBlockStartEvent) -> Iterator[ReplyEvent]:
        block = event.content_block
        if block.type == "text":
            if block.text:
                yield TextDelta(block.text)
        elif block.type == "tool_use":
            index = self._tool_index[event.index] = len(self._tool_index)
            name = self._names.canonical(block.name)
            # Streamed, the input arrives in deltas and starts empty; replayed, it is all here.
            arguments = _input(block.input)
            yield ToolCallDelta(index, block.id, name, json.dumps(arguments) if arguments else "")
        elif block.type == "thinking":
            self._signatures[event.index] = block.signature or ""
            if block.thinking:
                yield ThinkingDelta(block.thinking)
        elif block.type == "redacted_thinking":
            yield RedactedThinking(block.data)

    def _delta(self, event: RawContentBlockDeltaEvent) -> Iterator[ReplyEvent]:
        delta = event.delta
        if delta.type == "text_delta":
            yield TextDelta(delta.text)
        elif delta.type == "input_json_delta":
            # An empty partial_json is legal (a call without arguments): it adds nothing.
            index = self._tool_index.get(event.index)
            if delta.partial_json and index is not None:
                yield ToolCallDelta(index=index, arguments=delta.partial_json)
        elif delta.type == "thinking_delta":
            yield ThinkingDelta(delta.thinking)
        elif delta.type == "signature_delta":
            self._signatures[event.index] = delta.signature
            yield ThinkingDelta("", signature=delta.signature)  # passed on to streaming callers


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
