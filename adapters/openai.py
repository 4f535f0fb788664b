"""OpenAI Chat Completions, and every server that speaks it (vLLM, llama.cpp, Azure, ...)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator
from contextlib import aclosing
from typing import Any

from pydantic import ValidationError

from adapters.naming import ToolNames, for_wire, request_names
from adapters.openai_format import request_body
from adapters.openai_http import ChatCompletionsHttp
from adapters.openai_wire import WireEmbeddings, WireMessage, WireReply
from llm_service.assemble import StreamAssembler, finish_reason, tool_call
from llm_service.config import ModelConfig
from llm_service.errors import UpstreamProtocolError, UpstreamServerError
from llm_service.types import (
    AssistantMessage,
    ChatRequest,
    ChatResponse,
    EmbeddingRequest,
    EmbeddingResponse,
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
        completion = _read(raw)
        if completion.error_message is not None:
            raise UpstreamServerError(
                f"openai reported an error: {completion.error_message}", provider=PROVIDER
            )
        return _parse_completion(completion, names, self._config.upstream_model)

    async def stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        names = request_names(request)
        body = self._body(request, names)
        assembler = StreamAssembler()
        reason: FinishReason | None = None
        usage = Usage()
        model = self._config.upstream_model
        body = {**body, "stream": True, "stream_options": {"include_usage": True}}
        # Closed with the stream, so a caller who goes away frees the upstream connection now.
        async with aclosing(self._http.stream(body)) as events:
            async for data in events:
                chunk = _read(data)
                if chunk.error_message is not None:
                    raise UpstreamServerError(
                        f"openai reported an error: {chunk.error_message}", provider=PROVIDER
                    )
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


def _read(data: bytes) -> WireReply:
    try:
        return WireReply.model_validate_json(data)
    except ValidationError as exc:
        raise UpstreamProtocolError(
            f"openai answered with a malformed body: {exc}", provider=PROVIDER
        ) from exc


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
    prompt_details = usage.prompt_tokens_details
    completion_details = usage.completion_tokens_details
    return Usage(
        usage.prompt_tokens or 0,
        usage.completion_tokens or 0,
        cached_tokens=(prompt_details.cached_tokens or 0) if prompt_details else 0,
        reasoning_tokens=(completion_details.reasoning_tokens or 0) if completion_details else 0,
    )
