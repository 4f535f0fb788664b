"""The long tail of providers (Bedrock, Vertex, Gemini, Groq, Mistral, ...) through LiteLLM.

LiteLLM speaks the OpenAI format on both sides, so requests reuse ``openai_format`` and answers
are read like OpenAI's. It is heavy to import: this module is imported only when a configured
model uses it (see ``gateway.providers``).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import AsyncGenerator, Iterator
from contextlib import contextmanager
from functools import partial
from types import ModuleType
from typing import Any

import openai

from adapters.naming import IdStyle, ToolNames, for_wire, request_names
from adapters.openai_format import request_body
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

PROVIDER = "litellm"
_FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}
# Mistral accepts only 9-alphanumeric tool-call ids; everyone else behind LiteLLM takes OpenAI's.
_MISTRAL_PREFIXES = ("mistral/", "codestral/", "text-completion-codestral/")


def load_litellm() -> ModuleType:
    """Import LiteLLM without it fetching its price list from the internet at import time."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    module = importlib.import_module("litellm")
    settings: Any = module  # its settings are untyped module attributes
    # Its "Give Feedback" banners go to stdout, which carries the gateway's JSON log lines.
    settings.suppress_debug_info = True
    return module


def id_style(model: str) -> IdStyle:
    return "mistral" if model.startswith(_MISTRAL_PREFIXES) else "openai"


class LiteLLMAdapter:
    provider = PROVIDER

    def __init__(self, config: ModelConfig, api_key: str | None) -> None:
        self._config = config
        self._api_key = api_key
        self._litellm = load_litellm()

    def _arguments(self, request: ChatRequest, names: ToolNames) -> dict[str, Any]:
        model = self._config.upstream_model
        wire = for_wire(request, names, id_style(model))
        body = request_body(wire, model, self._config.max_tokens)
        timeouts = self._config.timeouts
        # The gateway owns retries: LiteLLM's own (and the SDKs' under it) stay off.
        body.update(num_retries=0, max_retries=0, timeout=timeouts.read)
        if self._config.base_url:
            body["api_base"] = self._config.base_url
        if self._api_key:
            body["api_key"] = self._api_key
        return body

    async def complete(self, request: ChatRequest) -> ChatResponse:
        names = request_names(request)
        model = self._config.upstream_model
        with _mapped_errors():
            reply = await self._litellm.acompletion(**self._arguments(request, names))
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

    async def _chunks(self, request: ChatRequest, names: ToolNames) -> AsyncGenerator[Any, None]:
        """LiteLLM's stream chunks, its failures mapped; the yield is outside the mapping."""
        arguments = self._arguments(request, names)
        with _mapped_errors():
            chunks = await self._litellm.acompletion(
                **arguments, stream=True, stream_options={"include_usage": True}
            )
        while True:
            with _mapped_errors():
                chunk = await anext(chunks, None)
            if chunk is None:
                return
            yield chunk

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResponse:
        model = self._config.upstream_model
        arguments: dict[str, Any] = {
            "model": model,
            "input": list(request.inputs),
            "num_retries": 0,
            "max_retries": 0,
            "timeout": self._config.timeouts.read,
            "encoding_format": "float",
        }
        if request.dimensions is not None:
            arguments["dimensions"] = request.dimensions
        if request.user is not None:
            arguments["user"] = request.user
        if self._config.base_url:
            arguments["api_base"] = self._config.base_url
        if self._api_key:
            arguments["api_key"] = self._api_key
        with _mapped_errors():
            reply = await self._litellm.aembedding(**arguments)
        return _embeddings(reply, len(request.inputs), model)

    async def probe(self) -> str | None:
        return None

    async def aclose(self) -> None:
        return None


def _usage(usage: Any) -> Usage | None:
    if usage is None or not getattr(usage, "prompt_tokens", None):
        return None
    prompt_details = getattr(usage, "prompt_tokens_details", None)
    completion_details = getattr(usage, "completion_tokens_details", None)
    return Usage(
        usage.prompt_tokens or 0,
        usage.completion_tokens or 0,
        cached_tokens=getattr(prompt_details, "cached_tokens", None) or 0,
        reasoning_tokens=getattr(completion_details, "reasoning_tokens", None) or 0,
    )


def _embeddings(reply: Any, count: int, default_model: str) -> EmbeddingResponse:
    data = sorted(reply.data or (), key=lambda item: item["index"])
    if len(data) != count:
        raise UpstreamProtocolError(
            "litellm answered a different number of embeddings than inputs", provider=PROVIDER
        )
    usage = getattr(reply, "usage", None)
    return EmbeddingResponse(
        tuple(tuple(item["embedding"]) for item in data),
        Usage(getattr(usage, "prompt_tokens", None) or 0),
        getattr(reply, "model", None) or default_model,
    )


class ReplyParser:
    """A reply's events, from each streamed chunk (its choice's ``delta``) or from the whole
    reply (its choice's ``message``, final by nature): LiteLLM answers in OpenAI's shapes."""

    def __init__(self, names: ToolNames) -> None:
        self._names = names

    def __call__(self, reply: Any) -> Iterator[ReplyEvent]:
        model = getattr(reply, "model", None)
        if model:
            yield AnsweredBy(model)
        for choice in (getattr(reply, "choices", None) or ())[:1]:
            whole = getattr(choice, "message", None)
            message = getattr(choice, "delta", None) or whole
            reasoning = getattr(message, "reasoning_content", None)
            if reasoning:
                yield ThinkingDelta(reasoning)
            content = getattr(message, "content", None)
            if content:
                yield TextDelta(content)
            yield from self._calls(getattr(message, "tool_calls", None) or ())
            reason = getattr(choice, "finish_reason", None)
            if reason or whole is not None:
                yield Finished(_FINISH_REASONS.get(reason or "stop", "stop"))
        usage = _usage(getattr(reply, "usage", None))
        if usage is not None:
            yield usage

    def _calls(self, calls: Any) -> Iterator[ToolCallDelta]:
        for position, call in enumerate(calls):
            function = call.function
            name = getattr(function, "name", None)
            index = getattr(call, "index", None)
            yield ToolCallDelta(
                index=position if index is None else index,
                id=call.id,
                name=self._names.canonical(name) if name else None,
                arguments=getattr(function, "arguments", None) or "",
            )


@contextmanager
def _mapped_errors() -> Iterator[None]:
    """LiteLLM's exceptions subclass the OpenAI SDK's and carry the upstream status."""
    try:
        yield
    except GatewayError:
        raise
    except openai.APITimeoutError as exc:
        raise UpstreamTimeout(
            "litellm's provider did not answer in time", provider=PROVIDER
        ) from exc
    except openai.APIConnectionError as exc:
        raise UpstreamConnectionError(
            f"cannot reach litellm's provider: {exc}", provider=PROVIDER
        ) from exc
    except openai.APIError as exc:
        status = getattr(exc, "status_code", None)
        if not isinstance(status, int) or status < 400:
            raise UpstreamServerError(f"litellm failed: {exc.message}", provider=PROVIDER) from exc
        # The upstream's headers (Retry-After) survive only on this attribute LiteLLM adds.
        headers = getattr(exc, "litellm_response_headers", None) or {}
        raise error_for_status(
            status,
            exc.message,
            provider=PROVIDER,
            retry_after=parse_retry_after(headers.get("retry-after")),
            code=exc.code if isinstance(exc.code, str) else None,
        ) from exc
