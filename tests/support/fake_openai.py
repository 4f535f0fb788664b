"""A wire-faithful fake of the OpenAI Chat Completions and Embeddings APIs.

Tests queue replies; the fake answers them in order (or echoes), whole or streamed exactly as
OpenAI streams: a role chunk, content deltas, tool-call deltas whose id and name come first and
whose arguments are split across chunks, a finish chunk, an optional usage chunk, ``[DONE]``.

``POST /v1/responses`` answers the same queue as OpenAI's Responses API, whole or streamed in its
typed events (``tests/support/fake_openai_responses.py``); ``FakeReply.reasoning`` adds a
reasoning item with that summary.

``POST /v1/embeddings`` answers a string or a list of strings with deterministic vectors
(``fake_vector``) of ``dimensions`` floats (default 8), as floats or as base64 little-endian
float32, as OpenAI does; it refuses what OpenAI refuses (empty input, an unknown encoding).

Chat requests are refused (400 ``invalid_request_error``) where OpenAI refuses them: a tool-call
id over 40 characters, a ``tool`` message that answers no call of the assistant turn before it,
an assistant turn whose calls are not all answered, ``tool_choice`` without tools, a
``response_format`` that is not text, json_object or a named json_schema, an unknown
``reasoning_effort``, Anthropic-only fields (``cache_control``, ``thinking``), an image part in
any message but a user's (a ``tool`` message takes text only).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import struct
import threading
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.support import fake_openai_responses as responses_api


@dataclass
class FakeToolCall:
    name: str
    arguments: dict[str, Any]
    id: str = ""


@dataclass
class FakeReply:
    text: str | None = None
    tool_calls: list[FakeToolCall] = field(default_factory=list)
    status: int = 200
    error: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    finish_reason: str | None = None
    prompt_tokens: int = 11  # all input tokens, cached ones included (OpenAI's convention)
    completion_tokens: int = 7  # all output tokens, reasoning ones included
    cached_tokens: int = 0  # of prompt_tokens: prompt-cache reads
    cache_write_tokens: int = 0  # of prompt_tokens: Anthropic's cache creation
    reasoning_tokens: int = 0  # of completion_tokens
    # Reasoning text: ``reasoning_content`` as vLLM, DeepSeek and llama.cpp send it beside the
    # content (Ollama's ``thinking``; for Anthropic, a signed thinking block first).
    # On /v1/responses, a reasoning item with this summary.
    reasoning: str | None = None
    # Fault modes. ``hang``: never answer (until the client gives up and disconnects);
    # ``first_byte_delay``: seconds before the headers; ``garbage``: a 200 that is not JSON;
    # ``truncate_after``: a stream cut after that many chunks, without a finish or [DONE];
    # ``stall_after``: a stream that goes silent after that many chunks;
    # ``stream_error``: an in-stream ``{"error": ...}`` event after ``error_after`` chunks.
    hang: bool = False
    first_byte_delay: float = 0.0
    garbage: bool = False
    truncate_after: int | None = None
    stall_after: int | None = None
    stream_error: dict[str, Any] | None = None
    error_after: int = 1


@dataclass
class FakeOpenAI:
    replies: deque[FakeReply] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    # While set, every request gets this reply and the queue waits: a provider outage.
    outage: FakeReply | None = None
    # Set when a client closed its connection while the fake held a reply back (hang, stall).
    client_left: threading.Event = field(default_factory=threading.Event)
    paths: list[str] = field(default_factory=list)  # of each request in ``requests``
    # As OpenAI's models without reasoning: ``include: ["reasoning.encrypted_content"]`` is a 400.
    refuses_encrypted_reasoning: bool = False
    responses_memory: responses_api.ResponsesMemory = field(
        default_factory=responses_api.ResponsesMemory
    )

    def queue(self, *replies: FakeReply) -> None:
        self.replies.extend(replies)

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/embeddings", self._embeddings, methods=["POST"]),
                Route("/v1/responses", self._responses, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
            ]
        )

    async def _models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": []})

    async def _embeddings(self, request: Request) -> Response:
        body = await request.json()
        self.paths.append(request.url.path)
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        if self.outage is not None:
            error = self.outage.error or {"message": "fake failure", "type": "server_error"}
            return JSONResponse({"error": error}, self.outage.status, headers=self.outage.headers)
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else inputs
        encoding = body.get("encoding_format", "float")
        dimensions = body.get("dimensions", 8)
        if (
            not texts
            or not all(isinstance(t, str) and t for t in texts)
            or encoding not in ("float", "base64")
            or not isinstance(dimensions, int)
            or dimensions < 1
        ):
            error = {"message": "invalid embeddings request", "type": "invalid_request_error"}
            return JSONResponse({"error": error}, 400)
        data = []
        for index, text in enumerate(texts):
            vector = fake_vector(text, dimensions)
            packed = base64.b64encode(struct.pack(f"<{dimensions}f", *vector)).decode()
            embedding: Any = vector if encoding == "float" else packed
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        tokens = sum(len(t.split()) for t in texts)
        return JSONResponse(
            {
                "object": "list",
                "data": data,
                "model": body["model"],
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    async def _responses(self, request: Request) -> Response:
        body = await request.json()
        self.paths.append(request.url.path)
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        refusal = self.responses_memory.refusal(body)
        if self.refuses_encrypted_reasoning and responses_api.ENCRYPTED in body.get("include", []):
            refusal = "Encrypted content is not supported with this model."
        if refusal is not None:
            error = {"message": refusal, "type": "invalid_request_error", "code": None}
            return JSONResponse({"error": error}, 400)
        text = responses_api.echo_text(body)
        reply = self.outage or (self.replies.popleft() if self.replies else FakeReply(text=text))
        await _delay(request, reply, self.client_left)
        if reply.status != 200:
            error = reply.error or {"message": "fake failure", "type": "server_error"}
            return JSONResponse({"error": error}, reply.status, headers=reply.headers)
        calls = [
            FakeToolCall(c.name, c.arguments, c.id or f"call_fake_{len(self.requests)}_{i}")
            for i, c in enumerate(reply.tool_calls)
        ]
        memory = self.responses_memory
        if not body.get("stream"):
            return JSONResponse(responses_api.whole(body, reply, calls, memory))
        events = responses_api.events(body, reply, calls, memory)
        return StreamingResponse(_with_error(reply, events), media_type="text/event-stream")

    async def _chat(self, request: Request) -> Response:
        body = await request.json()
        self.paths.append(request.url.path)
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        problem = _invalid_chat(body)
        if problem:
            error = {"message": problem, "type": "invalid_request_error", "code": None}
            return JSONResponse({"error": error}, 400)
        reply = self.outage or (self.replies.popleft() if self.replies else _echo(body))
        await _delay(request, reply, self.client_left)
        if reply.garbage:
            return Response(b"<html>502 Bad Gateway</html>", 200, media_type="application/json")
        if reply.status != 200:
            error = reply.error or {"message": "fake failure", "type": "server_error"}
            return JSONResponse({"error": error}, reply.status, headers=reply.headers)
        calls = [
            FakeToolCall(c.name, c.arguments, c.id or f"call_fake_{len(self.requests)}_{i}")
            for i, c in enumerate(reply.tool_calls)
        ]
        finish = reply.finish_reason or ("tool_calls" if calls else "stop")
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            chunks = _chunks(body["model"], reply, calls, finish, include_usage)
            faulty = _faulty(request, reply, chunks, self.client_left)
            return StreamingResponse(faulty, media_type="text/event-stream")
        return JSONResponse(_completion(body["model"], reply, calls, finish))


_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")


def _invalid_chat(body: dict[str, Any]) -> str | None:
    if "tool_choice" in body and not body.get("tools"):
        return "Invalid value for 'tool_choice': only allowed when 'tools' are specified."
    if body.get("reasoning_effort", "low") not in _EFFORTS:
        return f"Invalid value for 'reasoning_effort': {body['reasoning_effort']!r}"
    fmt = body.get("response_format")
    if fmt is not None:
        kind = fmt.get("type")
        named = (fmt.get("json_schema") or {}).get("name")
        if kind not in ("text", "json_object", "json_schema") or (
            kind == "json_schema" and not named
        ):
            return "Invalid 'response_format': a json_schema needs a name and a schema."
    for key in ("thinking", "cache_control", "output_config"):
        if key in body:
            return f"Unrecognized request argument supplied: {key}"
    return _misplaced_image(body.get("messages") or []) or _invalid_tool_history(
        body.get("messages") or []
    )


def _misplaced_image(messages: list[dict[str, Any]]) -> str | None:
    for number, message in enumerate(messages):
        content = message.get("content")
        role = message.get("role")
        if role == "user" or not isinstance(content, list):
            continue
        if any(part.get("type") != "text" for part in content):
            return (
                f"Invalid 'messages[{number}]'. Image URLs are only allowed for messages with "
                f"role 'user', but this message with role '{role}' contains an image URL."
            )
    return None


def _invalid_tool_history(messages: list[dict[str, Any]]) -> str | None:
    if not any(message.get("tool_calls") for message in messages):
        # A history of text only: a server serving a raw-text model (vLLM, llama.cpp) takes
        # ``tool`` messages its chat template renders, answering calls written as text.
        return None
    pending: set[str] = set()
    for number, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            if message.get("tool_call_id") not in pending:
                return (
                    f"Invalid parameter: messages with role 'tool' must be a response to a "
                    f"preceeding message with 'tool_calls' (messages[{number}])."
                )
            pending.discard(message["tool_call_id"])
            continue
        if pending:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages "
                f"responding to each 'tool_call_id'. Missing: {sorted(pending)}"
            )
        for index, call in enumerate(message.get("tool_calls") or ()):
            if len(call.get("id", "")) > 40:
                return (
                    f"Invalid 'messages[{number}].tool_calls[{index}].id': string too long. "
                    "Expected a string with maximum length 40."
                )
        pending = {call["id"] for call in message.get("tool_calls") or ()}
    return None


async def _wait_for_disconnect(request: Request, left: threading.Event) -> None:
    # The body was read already, so the next message on the channel is the disconnect.
    try:
        while (await request.receive())["type"] != "http.disconnect":
            pass
    finally:
        # Also when cancelled: Starlette's own disconnect watcher may see it first and cancel.
        left.set()


async def _delay(request: Request, reply: FakeReply, left: threading.Event) -> None:
    if reply.hang:
        await _wait_for_disconnect(request, left)
    elif reply.first_byte_delay:
        await asyncio.sleep(reply.first_byte_delay)


async def _faulty(
    request: Request, reply: FakeReply, chunks: AsyncIterator[str], left: threading.Event
) -> AsyncIterator[str]:
    """The stream, cut, stalled or interrupted by an error event as the reply asks."""
    sent = 0
    async for chunk in chunks:
        if reply.truncate_after is not None and sent >= reply.truncate_after:
            return
        if reply.stall_after is not None and sent >= reply.stall_after:
            await _wait_for_disconnect(request, left)
            return
        if reply.stream_error is not None and sent == reply.error_after:
            yield f"data: {json.dumps({'error': reply.stream_error})}\n\n"
            return
        yield chunk
        sent += 1


async def _with_error(reply: FakeReply, events: AsyncIterator[str]) -> AsyncIterator[str]:
    """A Responses stream, ended by an ``error`` event after ``error_after`` events if asked."""
    sent = 0
    async for event in events:
        if reply.stream_error is not None and sent == reply.error_after:
            yield responses_api.error_event(reply.stream_error, sent)
            return
        yield event
        sent += 1


def fake_vector(text: str, dimensions: int = 8) -> list[float]:
    """A deterministic vector for ``text``, exactly representable as float32."""
    digest = hashlib.sha256(text.encode()).digest()
    return [(digest[i % len(digest)] - 128) / 128 for i in range(dimensions)]


def _echo(body: dict[str, Any]) -> FakeReply:
    last = body["messages"][-1]
    content = last.get("content")
    return FakeReply(text=f"fake says: {content if isinstance(content, str) else 'parts'}")


def _usage(reply: FakeReply) -> dict[str, Any]:
    return {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": reply.cached_tokens, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": reply.reasoning_tokens,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _completion(
    model: str, reply: FakeReply, calls: list[FakeToolCall], finish: str
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text, "refusal": None}
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning
    if calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for c in calls
        ]
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": _usage(reply),
        "system_fingerprint": "fp_fake",
    }


def _chunks(model: str, reply: FakeReply, calls: list[FakeToolCall], finish: str, usage: bool):  # type: ignore[no-untyped-def]
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model}

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
        payload = {**base, "choices": [choice]}
        if usage:
            payload["usage"] = None
        return f"data: {json.dumps(payload)}\n\n"

    async def generate():  # type: ignore[no-untyped-def]
        yield chunk({"role": "assistant", "content": "", "refusal": None})
        reasoning = reply.reasoning or ""
        for start in range(0, len(reasoning), 4):
            yield chunk({"reasoning_content": reasoning[start : start + 4]})
        text = reply.text or ""
        for start in range(0, len(text), 4):
            yield chunk({"content": text[start : start + 4]})
        for index, call in enumerate(calls):
            yield chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call.id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": ""},
                        }
                    ]
                }
            )
            arguments = json.dumps(call.arguments)
            for start in range(0, len(arguments), 5):
                piece = arguments[start : start + 5]
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        yield chunk({}, finish)
        if usage:
            yield f"data: {json.dumps({**base, 'choices': [], 'usage': _usage(reply)})}\n\n"
        yield "data: [DONE]\n\n"

    return generate()
