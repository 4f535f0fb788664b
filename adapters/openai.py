"""OpenAI Chat Completions, and every server that speaks it (vLLM, llama.cpp, Azure, ...)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator
from contextlib import contextmanager
from typing import Any

import aiohttp
import httpx
import openai
from openai._types import RequestOptions

from adapters.naming import ToolNames, for_wire, request_names
from adapters.openai_format import request_body
from adapters.openai_wire import WireMessage, WireReply
from llm_service.assemble import StreamAssembler, finish_reason, tool_call
from llm_service.config import ModelConfig
from llm_service.errors import (
    GatewayError,
    UpstreamConnectionError,
    UpstreamProtocolError,
    UpstreamServerError,
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
    ThinkingDelta,
    ToolCallDelta,
    Usage,
)

PROVIDER = "openai"
_FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}
# Servers without authentication still need some key for the SDK to send.
_NO_KEY = "not-needed"
_EMPTY = WireMessage()
# The body is already plain JSON, so it is posted through the SDK's request layer as it is:
# ``create(**body)`` would first walk it against the SDK's TypedDicts, a fifth of a request's CPU.
# Replies come back as bytes (whole) or decoded dicts (stream events) and are read through
# ``adapters.openai_wire`` rather than the SDK's response models, for the same reason.
# ``security`` as ``create`` passes it: the bearer key only, never an admin key.
_CHAT_PATH = "/chat/completions"
_WITH_KEY: RequestOptions = {"security": {"bearer_auth": True}}


class OpenAIAdapter:
    provider = PROVIDER

    def __init__(self, config: ModelConfig, api_key: str | None) -> None:
        self._config = config
        timeout = httpx.Timeout(
            connect=config.timeouts.connect,
            read=config.timeouts.read,
            write=config.timeouts.read,
            pool=config.timeouts.connect,
        )
        # The gateway is the only retry layer: SDK retries would multiply upstream load.
        # One aiohttp-backed connection pool per model, reused by every request: httpx's pool
        # bookkeeping was the largest single cost of a request under load (docs/performance.md).
        self._client = openai.AsyncOpenAI(
            api_key=api_key or _NO_KEY,
            base_url=config.base_url,
            timeout=timeout,
            max_retries=0,
            http_client=openai.DefaultAioHttpClient(timeout=timeout),
        )

    def _body(self, request: ChatRequest, names: ToolNames) -> dict[str, Any]:
        wire = for_wire(request, names, "openai")
        return request_body(wire, self._config.upstream_model, self._config.max_tokens)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        names = request_names(request)
        body = self._body(request, names)
        with _mapped_errors():
            raw = await self._client.post(_CHAT_PATH, body=body, cast_to=bytes, options=_WITH_KEY)
            completion = WireReply.model_validate_json(raw)
        return _parse_completion(completion, names, self._config.upstream_model)

    async def stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        names = request_names(request)
        body = self._body(request, names)
        assembler = StreamAssembler()
        reason: FinishReason | None = None
        usage = Usage()
        model = self._config.upstream_model
        with _mapped_errors():
            chunks = await self._client.post(
                _CHAT_PATH,
                body={**body, "stream": True, "stream_options": {"include_usage": True}},
                cast_to=object,
                options=_WITH_KEY,
                stream=True,
                stream_cls=openai.AsyncStream[object],
            )
            async for data in chunks:
                chunk = WireReply.model_validate(data)
                model = chunk.model or model
                if chunk.usage is not None:
                    usage = _usage(chunk)
                for event in _chunk_events(chunk, names):
                    assembler.add(event)
                    yield event
                for choice in chunk.choices:
                    if choice.finish_reason:
                        reason = _FINISH_REASONS.get(choice.finish_reason, "stop")
        if reason is None:
            # The connection closed before the finish chunk: the answer is cut, not complete.
            raise UpstreamProtocolError(
                "openai ended the stream before finishing", provider=PROVIDER
            )
        yield StreamDone(assembler.finish(reason, usage, model))

    async def probe(self) -> str | None:
        return None

    async def aclose(self) -> None:
        await self._client.close()


def _chunk_events(chunk: WireReply, names: ToolNames) -> Iterator[StreamEvent]:
    for choice in chunk.choices[:1]:
        delta = choice.delta or _EMPTY
        reasoning = delta.thinking
        if reasoning:
            yield ThinkingDelta(reasoning)
        if delta.content:
            yield TextDelta(delta.content)
        for position, call in enumerate(delta.tool_calls or ()):
            function = call.function
            yield ToolCallDelta(
                index=position if call.index is None else call.index,
                id=call.id,
                name=names.canonical(function.name) if function and function.name else None,
                arguments=(function.arguments or "") if function else "",
            )


def _parse_completion(completion: WireReply, names: ToolNames, default_model: str) -> ChatResponse:
    if not completion.choices or completion.choices[0].message is None:
        raise UpstreamProtocolError("openai answered without a message", provider=PROVIDER)
    choice = completion.choices[0]
    message = choice.message or _EMPTY
    calls = tuple(
        tool_call(c.id or "", names.canonical(c.function.name or ""), c.function.arguments)
        for c in message.tool_calls or ()
        if c.type in (None, "function") and c.function is not None
    )
    reason = _FINISH_REASONS.get(choice.finish_reason or "stop", "stop")
    return ChatResponse(
        message=AssistantMessage(content=message.content, tool_calls=calls),
        finish_reason=finish_reason(reason, bool(calls)),
        usage=_usage(completion),
        model=completion.model or default_model,
    )


def _usage(reply: WireReply) -> Usage:
    usage = reply.usage
    if usage is None:
        return Usage()
    return Usage(usage.prompt_tokens or 0, usage.completion_tokens or 0)


@contextmanager
def _mapped_errors() -> Iterator[None]:
    try:
        yield
    except GatewayError:
        raise
    except openai.APIStatusError as exc:
        body = exc.body if isinstance(exc.body, dict) else {}
        code = body.get("code") if isinstance(body.get("code"), str) else None
        raise error_for_status(
            exc.status_code,
            _message(body) or exc.message,
            provider=PROVIDER,
            retry_after=parse_retry_after(exc.response.headers.get("retry-after")),
            code=code,
        ) from exc
    except openai.APIConnectionError as exc:  # APITimeoutError included
        if _timed_out(exc):
            raise UpstreamTimeout("openai did not answer in time", provider=PROVIDER) from exc
        raise UpstreamConnectionError(f"cannot reach openai: {exc}", provider=PROVIDER) from exc
    # While a stream is read the SDK lets the transport's own errors through unwrapped.
    except httpx.TimeoutException as exc:
        raise UpstreamTimeout("openai stopped sending mid-stream", provider=PROVIDER) from exc
    except httpx.TransportError as exc:
        raise UpstreamConnectionError(f"openai's stream broke: {exc}", provider=PROVIDER) from exc
    except (openai.APIResponseValidationError, ValueError) as exc:
        raise UpstreamProtocolError(
            f"openai answered with a malformed body: {exc}", provider=PROVIDER
        ) from exc
    except openai.APIError as exc:  # an error event inside a stream
        raise UpstreamServerError(
            f"openai reported an error: {exc.message}", provider=PROVIDER
        ) from exc


def _timed_out(exc: openai.APIConnectionError) -> bool:
    """httpx-aiohttp reports every aiohttp connection error (refused, reset) as a connect
    timeout, and lets some timeouts through unmapped: the chained cause tells which it was."""
    cause = exc.__cause__
    while cause is not None:
        if isinstance(cause, TimeoutError):
            return True
        if isinstance(cause, aiohttp.ClientConnectionError):
            return False
        cause = cause.__cause__
    return isinstance(exc, openai.APITimeoutError)


def _message(body: dict[str, Any]) -> str | None:
    value = body.get("message")
    return value if isinstance(value, str) else None
