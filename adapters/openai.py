"""OpenAI Chat Completions, and every server that speaks it (vLLM, llama.cpp, Azure, ...)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator
from typing import Any

from pydantic import ValidationError

from adapters.naming import ToolNames, for_wire, request_names
from adapters.openai_format import request_body
from adapters.openai_http import ChatCompletionsHttp
from adapters.openai_wire import WireEmbeddings, WireMessage, WireReply, WireToolCall, WireUsage
from llm_service.config import ModelConfig
from llm_service.errors import UpstreamProtocolError, UpstreamServerError
from llm_service.streaming import AnsweredBy, Finished, ReplyEvent, stream_reply, whole_reply
from llm_service.types import (
    ChatRequest,
    ChatResponse,
    EmbeddingRequest,
    EmbeddingResponse,
    FinishReason,
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
_EMPTY = WireMessage()


class OpenAIAdapter:
    provider = PROVIDER

    def __init__(self, config: ModelConfig, api_key: str | None) -> None:
        self._config = config
        # The gateway is the only retry layer; one connection pool per model, reused by every
        # request (docs/performance.md).
        self._http = ChatCompletionsHttp(PROVIDER, config.base_url, api_key, config.timeouts)

    def _body(self, request: ChatRequest, names: ToolNames) -> dict[str, Any]:
        wire = for_wire(request, names, "openai")
        return request_body(wire, self._config.upstream_model, self._config.max_tokens)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        names = request_names(request)
        raw = await self._http.post(self._body(request, names))
        model = self._config.upstream_model
        return whole_reply((raw,), ReplyParser(names, model), provider=PROVIDER, model=model)

    def stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        names = request_names(request)
        model = self._config.upstream_model

        def chunks() -> AsyncGenerator[bytes, None]:
            body = self._body(request, names)
            body.update(stream=True, stream_options={"include_usage": True})
            return self._http.stream(body)

        # The skeleton's generator is the stream itself: no extra step per chunk.
        return stream_reply(chunks, ReplyParser(names, model), provider=PROVIDER, model=model)

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResponse:
        body: dict[str, Any] = {
            "model": self._config.upstream_model,
            "input": list(request.inputs),
            "encoding_format": "float",
        }
        if request.dimensions is not None:
            body["dimensions"] = request.dimensions
        if request.user is not None:
            body["user"] = request.user
        raw = await self._http.post_embeddings(body)
        try:
            reply = WireEmbeddings.model_validate_json(raw)
        except ValidationError as exc:
            raise UpstreamProtocolError(
                f"openai answered embeddings with a malformed body: {exc}", provider=PROVIDER
            ) from exc
        if len(reply.data) != len(request.inputs):
            raise UpstreamProtocolError(
                "openai answered a different number of embeddings than inputs", provider=PROVIDER
            )
        vectors = tuple(tuple(d.embedding) for d in sorted(reply.data, key=lambda d: d.index))
        prompt_tokens = (reply.usage.prompt_tokens or 0) if reply.usage else 0
        return EmbeddingResponse(
            vectors, Usage(prompt_tokens), reply.model or self._config.upstream_model
        )

    async def probe(self) -> str | None:
        return None

    async def aclose(self) -> None:
        await self._http.aclose()


class ReplyParser:
    """A reply's events, from its one whole body or from each of its stream's events.

    A whole reply's ``message`` reads as one chunk's ``delta`` holding everything, and is final
    by nature; a stream's chunk is final when it carries a ``finish_reason``.
    """

    __slots__ = ("_model", "_names")

    def __init__(self, names: ToolNames, model: str) -> None:
        self._names = names
        self._model = model

    def __call__(self, data: bytes) -> Iterator[ReplyEvent]:
        reply = _read(data)
        if reply.error:
            raise UpstreamServerError(
                f"openai reported an error: {reply.error_message}", provider=PROVIDER
            )
        if reply.model and reply.model != self._model:
            self._model = reply.model
            yield AnsweredBy(reply.model)
        for choice in reply.choices[:1]:
            message = choice.delta or choice.message or _EMPTY
            reasoning = message.thinking
            if reasoning:
                yield ThinkingDelta(reasoning)
            if message.content:
                yield TextDelta(message.content)
            if message.tool_calls:
                yield from self._calls(message.tool_calls)
            if choice.finish_reason:
                yield Finished(_FINISH_REASONS.get(choice.finish_reason, "stop"))
            elif choice.message is not None:
                yield Finished("stop")
        if reply.usage is not None:
            yield _usage(reply.usage)

    def _calls(self, calls: list[WireToolCall]) -> Iterator[ToolCallDelta]:
        for position, call in enumerate(calls):
            if call.type not in (None, "function"):
                continue  # another kind of call (custom tools): not one this API declares
            function = call.function
            name = function.name if function else None
            yield ToolCallDelta(
                index=position if call.index is None else call.index,
                id=call.id,
                name=self._names.canonical(name) if name else None,
                arguments=(function.arguments or "") if function else "",
            )


def _read(data: bytes) -> WireReply:
    try:
        return WireReply.model_validate_json(data)
    except ValidationError as exc:
        raise UpstreamProtocolError(
            f"openai answered with a malformed body: {exc}", provider=PROVIDER
        ) from exc


def _usage(usage: WireUsage) -> Usage:
    prompt_details = usage.prompt_tokens_details
    completion_details = usage.completion_tokens_details
    return Usage(
        usage.prompt_tokens or 0,
        usage.completion_tokens or 0,
        cached_tokens=(prompt_details.cached_tokens or 0) if prompt_details else 0,
        reasoning_tokens=(completion_details.reasoning_tokens or 0) if completion_details else 0,
    )
