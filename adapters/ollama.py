"""Ollama's native ``/api/chat`` through the official ``ollama`` client."""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import ollama
import pydantic

from adapters.naming import ToolNames, for_wire, request_names
from adapters.ollama_format import request_body
from llm_service.assemble import StreamAssembler, finish_reason, tool_call
from llm_service.config import ModelConfig
from llm_service.errors import (
    UpstreamConnectionError,
    UpstreamProtocolError,
    UpstreamTimeout,
    error_for_status,
)
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
    Thinking,
    ThinkingDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)

PROVIDER = "ollama"
DEFAULT_HOST = "http://127.0.0.1:11434"
_DONE_REASONS: dict[str, FinishReason] = {"stop": "stop", "length": "length"}


def _mint_id() -> str:
    """Ollama's calls often carry no id; the caller needs one to answer them."""
    return f"call_{secrets.token_hex(12)}"


class OllamaAdapter:
    provider = PROVIDER

    def __init__(self, config: ModelConfig, api_key: str | None) -> None:
        self._config = config
        timeout = httpx.Timeout(
            connect=config.timeouts.connect,
            read=config.timeouts.read,
            write=config.timeouts.read,
            pool=config.timeouts.connect,
        )
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
        self._client = ollama.AsyncClient(
            host=config.base_url or DEFAULT_HOST, timeout=timeout, headers=headers
        )

    def _body(self, request: ChatRequest, names: ToolNames, stream: bool) -> dict[str, Any]:
        wire = for_wire(request, names, None)
        body = request_body(wire, self._config.upstream_model, self._config.max_tokens)
        return {**body, "stream": stream}

    async def _post(self, body: dict[str, Any], stream: bool) -> Any:
        # ``AsyncClient.chat`` validates ``tools`` into its typed model, which silently drops
        # anyOf/default/format/$ref; its request method posts the body exactly as built.
        return await self._client._request(
            ollama.ChatResponse, "POST", "/api/chat", json=body, stream=stream
        )

    async def complete(self, request: ChatRequest) -> ChatResponse:
        names = request_names(request)
        body = self._body(request, names, False)
        with _mapped_errors():
            reply: ollama.ChatResponse = await self._post(body, False)
        message = reply.message
        calls = tuple(_call(c, names) for c in message.tool_calls or ())
        thinking = (Thinking(message.thinking),) if message.thinking else ()
        return ChatResponse(
            message=AssistantMessage(
                content=message.content or None, tool_calls=calls, thinking=thinking
            ),
            finish_reason=finish_reason(_reason(reply), bool(calls)),
            usage=_usage(reply),
            model=reply.model or self._config.upstream_model,
        )

    async def stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        names = request_names(request)
        body = self._body(request, names, True)
        assembler = StreamAssembler()
        final: ollama.ChatResponse | None = None
        with _mapped_errors():
            chunks: AsyncIterator[ollama.ChatResponse] = await self._post(body, True)
        # Only the client's reading of the stream is mapped: what we make of a chunk is ours.
        async for chunk in _read(chunks):
            for event in _chunk_events(chunk, names, len(assembler.calls)):
                assembler.add(event)
                yield event
            if chunk.done:
                final = chunk
        if final is None:
            raise UpstreamProtocolError("ollama's stream ended before done", provider=PROVIDER)
        model = final.model or self._config.upstream_model
        yield StreamDone(assembler.finish(_reason(final), _usage(final), model))

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResponse:
        """Ollama's ``/api/embed``: every input in one call, vectors in the inputs' order."""
        with _mapped_errors():
            reply = await self._client.embed(
                model=self._config.upstream_model,
                input=list(request.inputs),
                dimensions=request.dimensions,
            )
        if len(reply.embeddings) != len(request.inputs):
            raise UpstreamProtocolError(
                "ollama answered a different number of embeddings than inputs", provider=PROVIDER
            )
        return EmbeddingResponse(
            tuple(tuple(vector) for vector in reply.embeddings),
            Usage(reply.prompt_eval_count or 0),
            reply.model or self._config.upstream_model,
        )

    async def probe(self) -> str | None:
        try:
            listed = await self._client.list()
        except (ConnectionError, httpx.HTTPError, ollama.ResponseError) as exc:
            return f"ollama at {self._config.base_url or DEFAULT_HOST} does not answer: {exc}"
        wanted = self._config.upstream_model
        present = {m.model for m in listed.models if m.model}
        if wanted not in present and f"{wanted}:latest" not in present:
            return f"ollama has no model `{wanted}` (ollama pull {wanted})"
        return None

    async def aclose(self) -> None:
        await self._client.close()  # type: ignore[no-untyped-call]  # untyped in ollama


def _call(call: ollama.Message.ToolCall, names: ToolNames) -> ToolCall:
    wire_id = (call.model_extra or {}).get("id")  # newer servers send one; older do not
    arguments: Any = call.function.arguments
    return tool_call(
        wire_id if isinstance(wire_id, str) and wire_id else _mint_id(),
        names.canonical(call.function.name),
        dict(arguments) if arguments is not None else None,
    )


def _reason(reply: ollama.ChatResponse) -> FinishReason:
    return _DONE_REASONS.get(reply.done_reason or "stop", "stop")


def _usage(reply: ollama.ChatResponse) -> Usage:
    return Usage(reply.prompt_eval_count or 0, reply.eval_count or 0)


def _chunk_events(
    chunk: ollama.ChatResponse, names: ToolNames, first_index: int
) -> Iterator[StreamEvent]:
    message = chunk.message
    if message.thinking:
        yield ThinkingDelta(message.thinking)
    if message.content:
        yield TextDelta(message.content)
    # Calls arrive whole, each in one chunk: one delta carries id, name and all arguments.
    for offset, wire in enumerate(message.tool_calls or ()):
        call = _call(wire, names)
        yield ToolCallDelta(
            index=first_index + offset,
            id=call.id,
            name=call.name,
            arguments=call.raw_arguments or json.dumps(call.arguments, ensure_ascii=False),
        )


async def _read(chunks: AsyncIterator[ollama.ChatResponse]) -> AsyncIterator[ollama.ChatResponse]:
    """The client's stream chunks, its failures mapped; the yield is outside the mapping."""
    while True:
        with _mapped_errors():
            chunk = await anext(chunks, None)
        if chunk is None:
            return
        yield chunk


@contextmanager
def _mapped_errors() -> Iterator[None]:
    """The client's and the wire's failures, by type; around client calls only, so a failure of
    ours is not charged to Ollama (the router reports it as an internal error)."""
    try:
        yield
    except ollama.ResponseError as exc:
        # -1: an error object inside a stream that had started with 200.
        status = exc.status_code if exc.status_code >= 400 else 500
        raise error_for_status(status, str(exc.error), provider=PROVIDER) from exc
    except httpx.TimeoutException as exc:
        raise UpstreamTimeout("ollama did not answer in time", provider=PROVIDER) from exc
    except (ConnectionError, httpx.TransportError) as exc:
        raise UpstreamConnectionError(f"cannot reach ollama: {exc}", provider=PROVIDER) from exc
    # The client decodes each body or line with json.loads, then validates it with pydantic.
    except (json.JSONDecodeError, pydantic.ValidationError) as exc:
        raise UpstreamProtocolError(
            f"ollama answered with a malformed body: {exc}", provider=PROVIDER
        ) from exc
