"""OpenAI's own Responses API (``POST {base_url}/responses``), passed through.

A Responses request to an OpenAI model is sent as OpenAI's Responses API rather than translated
to Chat Completions, so reasoning items (their encrypted content and summaries) come back to the
caller and go back to the model on the next turn, and usage keeps its reasoning and cached
tokens. The bodies stay the Responses API's JSON; only what the gateway reads (usage, model,
status, errors) is validated, by the small models below.

The gateway keeps the history and sends ``store: false``, so reasoning can only be replayed from
its encrypted content: the adapter asks for it (``include: ["reasoning.encrypted_content"]``).
A model that does not reason refuses that ("Encrypted content is not supported with this
model"): the request is sent again without it, and the adapter stops asking that model.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from adapters.openai import PROVIDER, OpenAIAdapter
from llm_service.config import ModelConfig
from llm_service.errors import UpstreamBadRequest, UpstreamProtocolError, UpstreamServerError
from llm_service.types import (
    JSON,
    ResponsesAnswer,
    ResponsesCall,
    ResponsesDone,
    ResponsesEvent,
    ResponsesStreamEvent,
    Usage,
)

ENCRYPTED_REASONING = "reasoning.encrypted_content"
# The events that end a stream with a response the caller can use (``response.failed`` and
# ``error`` end it with a failure).
_FINISHED = frozenset({"response.completed", "response.incomplete"})


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _InputDetails(_Wire):
    cached_tokens: int | None = None


class _OutputDetails(_Wire):
    reasoning_tokens: int | None = None


class _Usage(_Wire):
    input_tokens: int | None = None
    output_tokens: int | None = None
    input_tokens_details: _InputDetails | None = None
    output_tokens_details: _OutputDetails | None = None


class _Error(_Wire):
    message: str | None = None
    code: str | None = None


class _Response(_Wire):
    object: str | None = None
    model: str | None = None
    status: str | None = None
    usage: _Usage | None = None
    error: _Error | None = None


class OpenAIResponsesAdapter(OpenAIAdapter):
    """The OpenAI adapter, which also serves the Responses API itself (``ResponsesAdapter``)."""

    def __init__(self, config: ModelConfig, api_key: str | None) -> None:
        super().__init__(config, api_key)
        self._ask_encrypted = True  # until the model refuses encrypted reasoning

    def _responses_body(self, call: ResponsesCall, stream: bool) -> JSON:
        body: JSON = {**call.body, "model": self._config.upstream_model, "stream": stream}
        if body.get("max_output_tokens") is None and self._config.max_tokens is not None:
            body["max_output_tokens"] = self._config.max_tokens
        include = list(body.get("include") or [])
        if self._ask_encrypted and ENCRYPTED_REASONING not in include:
            body["include"] = [*include, ENCRYPTED_REASONING]
        return body

    def _refused_encrypted(self, exc: UpstreamBadRequest) -> bool:
        """Whether ``exc`` refused the encrypted reasoning this adapter asked for (then it no
        longer asks, and the request is worth sending again)."""
        if not self._ask_encrypted or "encrypted content" not in exc.message.lower():
            return False
        self._ask_encrypted = False
        return True

    async def respond(self, call: ResponsesCall) -> ResponsesAnswer:
        try:
            raw = await self._http.post_responses(self._responses_body(call, stream=False))
        except UpstreamBadRequest as exc:
            if not self._refused_encrypted(exc):
                raise
            raw = await self._http.post_responses(self._responses_body(call, stream=False))
        return self._answer(_json(raw))

    async def respond_stream(
        self, call: ResponsesCall
    ) -> AsyncGenerator[ResponsesStreamEvent, None]:
        started = False
        try:
            async with aclosing(self._events(call)) as events:
                async for event in events:
                    started = True
                    yield event
        except UpstreamBadRequest as exc:
            if started or not self._refused_encrypted(exc):
                raise
            async with aclosing(self._events(call)) as events:
                async for event in events:
                    yield event

    async def _events(self, call: ResponsesCall) -> AsyncGenerator[ResponsesStreamEvent, None]:
        body = self._responses_body(call, stream=True)
        # Closed with the stream, so a caller who goes away frees the upstream connection now.
        async with aclosing(self._http.stream_responses(body)) as events:
            async for data in events:
                event = _json(data)
                kind = event.get("type")
                if kind == "error":
                    message = event.get("message") or "an error occurred during streaming"
                    raise UpstreamServerError(
                        f"openai reported an error: {message}", provider=PROVIDER
                    )
                if kind in _FINISHED or kind == "response.failed":
                    response = event.get("response")
                    if not isinstance(response, dict):
                        raise UpstreamProtocolError(
                            f"openai sent `{kind}` without its response", provider=PROVIDER
                        )
                    yield ResponsesDone(event, self._answer(response))
                    return
                yield ResponsesEvent(event)
        raise UpstreamProtocolError("openai ended the stream before finishing", provider=PROVIDER)

    def _answer(self, response: JSON) -> ResponsesAnswer:
        try:
            read = _Response.model_validate(response)
        except ValidationError as exc:
            raise UpstreamProtocolError(
                f"openai answered with a malformed response: {exc}", provider=PROVIDER
            ) from exc
        if read.status == "failed":
            message = (read.error.message if read.error else None) or "the response failed"
            raise UpstreamServerError(f"openai reported an error: {message}", provider=PROVIDER)
        if read.object not in (None, "response"):
            raise UpstreamProtocolError(
                f"openai answered with `{read.object}`, not a response", provider=PROVIDER
            )
        return ResponsesAnswer(
            response, _usage(read.usage), read.model or self._config.upstream_model
        )


def _json(raw: bytes) -> JSON:
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise UpstreamProtocolError(
            f"openai answered with a body that is not JSON: {exc}", provider=PROVIDER
        ) from exc
    if not isinstance(document, dict):
        raise UpstreamProtocolError("openai answered with a non-object body", provider=PROVIDER)
    return document


def _usage(usage: _Usage | None) -> Usage:
    if usage is None:
        return Usage()
    inputs, outputs = usage.input_tokens_details, usage.output_tokens_details
    return Usage(
        usage.input_tokens or 0,
        usage.output_tokens or 0,
        cached_tokens=(inputs.cached_tokens or 0) if inputs else 0,
        reasoning_tokens=(outputs.reasoning_tokens or 0) if outputs else 0,
    )
