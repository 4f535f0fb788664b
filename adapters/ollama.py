"""Ollama's native ``/api/chat`` through the official ``ollama`` client."""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import httpx
import ollama
import pydantic

from adapters.naming import ToolNames, for_wire, request_names
from adapters.ollama_format import request_body
from llm_service.config import ModelConfig
from llm_service.errors import (
    UpstreamConnectionError,
    UpstreamProtocolError,
    UpstreamTimeout,
    error_for_status,
)
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
        model = self._config.upstream_model
        return whole_reply((reply,), ReplyParser(names), provider=PROVIDER, model=model)

    def stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        names = request_names(request)
        model = self._config.upstream_model
        return stream_reply(
            partial(self._chunks, request, names),
            ReplyParser(names),
            provider=PROVIDER,
            model=model,
        )

    async def _chunks(
        self, request: ChatRequest, names: ToolNames
    ) -> AsyncGenerator[ollama.ChatResponse, None]:
        """The client's stream chunks, its failures mapped; the yield is outside the mapping,
        so what we make of a chunk is ours."""
        body = self._body(request, names, True)
        with _mapped_errors():
            chunks: AsyncIterator[ollama.ChatResponse] = await self._post(body, True)
        while True:
            with _mapped_errors():
                chunk = await anext(chunks, None)
            if chunk is None:
                return
            yield chunk

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


class ReplyParser:
    """A reply's events, from each streamed chunk or from the whole reply (the one chunk that
    holds everything, ``done`` included). Calls arrive whole, each in one chunk."""

    def __init__(self, names: ToolNames) -> None:
        self._names = names
        self._calls = 0

    def __call__(self, chunk: ollama.ChatResponse) -> Iterator[ReplyEvent]:
        message = chunk.message
        if message.thinking:
            yield ThinkingDelta(message.thinking)
        if message.content:
            yield TextDelta(message.content)
        for wire in message.tool_calls or ():
            yield self._call(wire)
        if chunk.done:
            if chunk.model:
                yield AnsweredBy(chunk.model)
            yield Usage(chunk.prompt_eval_count or 0, chunk.eval_count or 0)
            yield Finished(_DONE_REASONS.get(chunk.done_reason or "stop", "stop"))

    def _call(self, call: ollama.Message.ToolCall) -> ToolCallDelta:
        """One delta with the whole call: id, name and all its arguments."""
        wire_id = (call.model_extra or {}).get("id")  # newer servers send one; older do not
        arguments: Any = call.function.arguments
        index = self._calls
        self._calls += 1
        return ToolCallDelta(
            index,
            wire_id if isinstance(wire_id, str) and wire_id else _mint_id(),
            self._names.canonical(call.function.name),
            json.dumps(dict(arguments), ensure_ascii=False) if arguments else "",
        )


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
