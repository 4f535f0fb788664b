"""OpenAI Chat Completions, and every server that speaks it (vLLM, llama.cpp, Azure, ...)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator
from contextlib import contextmanager
from typing import Any

import aiohttp
import httpx
import openai
from openai._types import RequestOptions
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from adapters.naming import ToolNames, for_wire, request_names
from adapters.openai_format import request_body
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
# The body is already plain JSON, so it is posted through the SDK's request layer as it is:
# ``create(**body)`` would first walk it against the SDK's TypedDicts, a fifth of a request's CPU.
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
            completion = await self._client.post(
                _CHAT_PATH, body=body, cast_to=ChatCompletion, options=_WITH_KEY
            )
        return _parse_completion(completion, names)

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
                cast_to=ChatCompletion,
                options=_WITH_KEY,
                stream=True,
                stream_cls=openai.AsyncStream[ChatCompletionChunk],
            )
            async for chunk in chunks:
                model = chunk.model or model
                if chunk.usage is not None:
                    usage = Usage(chunk.usage.prompt_tokens, chunk.usage.completion_tokens)
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


def _chunk_events(chunk: ChatCompletionChunk, names: ToolNames) -> Iterator[StreamEvent]:
    for choice in chunk.choices[:1]:
        delta = choice.delta
        reasoning = _reasoning(delta.model_extra)
        if reasoning:
            yield ThinkingDelta(reasoning)
        if delta.content:
            yield TextDelta(delta.content)
        for call in delta.tool_calls or ():
            function = call.function
            yield ToolCallDelta(
                index=call.index,
                id=call.id,
                name=names.canonical(function.name) if function and function.name else None,
                arguments=(function.arguments or "") if function else "",
            )


def _reasoning(extra: dict[str, Any] | None) -> str | None:
    """vLLM, llama.cpp and others stream reasoning in a non-standard field."""
    if not extra:
        return None
    value = extra.get("reasoning_content") or extra.get("reasoning")
    return value if isinstance(value, str) else None


def _parse_completion(completion: ChatCompletion, names: ToolNames) -> ChatResponse:
    if not completion.choices:
        raise UpstreamProtocolError("openai answered without choices", provider=PROVIDER)
    choice = completion.choices[0]
    message = choice.message
    calls = tuple(
        tool_call(c.id, names.canonical(c.function.name), c.function.arguments)
        for c in message.tool_calls or ()
        if c.type == "function"
    )
    usage = completion.usage
    reason = _FINISH_REASONS.get(choice.finish_reason or "stop", "stop")
    return ChatResponse(
        message=AssistantMessage(content=message.content, tool_calls=calls),
        finish_reason=finish_reason(reason, bool(calls)),
        usage=Usage(usage.prompt_tokens, usage.completion_tokens) if usage else Usage(),
        model=completion.model,
    )


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
