"""A wire-faithful fake of Ollama's native API (``POST /api/chat``, ``POST /api/embed``,
``GET /api/tags``).

Streams are NDJSON: content pieces, each tool call whole in one chunk (with ``arguments`` as an
object), then a final ``done: true`` chunk with ``done_reason`` and token counts. Like real
Ollama, ``done_reason`` is ``stop`` even when the model called tools, and calls carry no id.

Like Ollama it refuses (400 ``{"error": ...}``) tool-call arguments that are not objects, tool
messages without ``tool_name``, a ``think`` that is not a boolean or low/medium/high, and a
``format`` that is not "json" or a schema object, content that is not a string, and ``images``
(on any message, a tool's included) that are not bare base64. It keeps the tools exactly as
posted, so tests can see whether a schema survived the client. ``/api/embed`` answers ``input``
(a string or a list) with ``embeddings`` (one vector per input: ``fake_vector``, ``dimensions``
long, default 8) and ``prompt_eval_count``; a model it does not have gets 404 as from Ollama.
"""

from __future__ import annotations

import base64
import json
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.support.fake_anthropic import Fault
from tests.support.fake_openai import FakeReply, fake_vector

_CREATED_AT = "2026-01-01T00:00:00.000000Z"


@dataclass
class FakeOllama:
    models: list[str] = field(default_factory=lambda: ["llama3.2:latest"])
    replies: deque[FakeReply | Fault] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)

    def queue(self, *replies: FakeReply | Fault) -> None:
        self.replies.extend(replies)

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/api/chat", self._chat, methods=["POST"]),
                Route("/api/embed", self._embed, methods=["POST"]),
                Route("/api/tags", self._tags, methods=["GET"]),
            ]
        )

    async def _tags(self, request: Request) -> Response:
        return JSONResponse(
            {"models": [{"name": m, "model": m, "size": 1, "digest": "0"} for m in self.models]}
        )

    async def _embed(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        model = body.get("model")
        if model not in self.models and f"{model}:latest" not in self.models:
            return JSONResponse({"error": f"model '{model}' not found"}, 404)
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else inputs
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return JSONResponse({"error": "invalid input type"}, 400)
        dimensions = body.get("dimensions") or 8
        return JSONResponse(
            {
                "model": body["model"],
                "embeddings": [fake_vector(text, dimensions) for text in texts],
                "total_duration": 1000,
                "load_duration": 100,
                "prompt_eval_count": sum(len(t.split()) for t in texts),
            }
        )

    async def _chat(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        problem = _invalid(body)
        if problem:
            return JSONResponse({"error": problem}, 400)
        if body["model"] not in self.models and f"{body['model']}:latest" not in self.models:
            return JSONResponse({"error": f"model '{body['model']}' not found"}, 404)
        reply = self.replies.popleft() if self.replies else _echo(body)
        if isinstance(reply, Fault) and reply.kind == "malformed":
            return Response("<html>bad gateway</html>", 200, media_type="application/json")
        if isinstance(reply, FakeReply) and reply.status != 200:
            message = (reply.error or {}).get("message", "fake failure")
            return JSONResponse({"error": message}, reply.status, headers=reply.headers)
        answer = reply if isinstance(reply, FakeReply) else FakeReply("partial")
        if body.get("stream", True):
            fault = reply.kind if isinstance(reply, Fault) else None
            lines = _lines(body["model"], answer, fault)
            return StreamingResponse(lines, media_type="application/x-ndjson")
        return JSONResponse(_final(body["model"], answer, _message(answer)))


def _invalid(body: dict[str, Any]) -> str | None:
    if body.get("think", True) not in (True, False, "low", "medium", "high"):
        return f"invalid think value: {body['think']!r}"
    fmt = body.get("format", "json")
    if fmt != "json" and not isinstance(fmt, dict):
        return f"invalid format: {fmt!r}"
    return next(filter(None, map(_invalid_message, body.get("messages") or ())), None)


def _invalid_message(message: dict[str, Any]) -> str | None:
    for call in message.get("tool_calls") or ():
        if not isinstance(call.get("function", {}).get("arguments"), dict):
            return "json: cannot unmarshal string into Go value of type api.ToolCallArguments"
    if message.get("role") == "tool" and not message.get("tool_name"):
        return "tool message without tool_name"
    if not isinstance(message.get("content", ""), str):
        return "json: cannot unmarshal array into Go struct field Message.content of type string"
    if not all(_is_base64(image) for image in message.get("images") or ()):
        return "illegal base64 data at input byte 4"
    return None


def _is_base64(data: Any) -> bool:
    """Ollama decodes each image as bare base64: a data: URL or a link is refused."""
    try:
        base64.b64decode(data, validate=True)
    except (ValueError, TypeError):
        return False
    return True


def _echo(body: dict[str, Any]) -> FakeReply:
    return FakeReply(text=f"fake says: {body['messages'][-1].get('content') or 'parts'}")


def _message(reply: FakeReply, content: str | None = None) -> dict[str, Any]:
    text = reply.text or "" if content is None else content
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if reply.reasoning and content is None:
        message["thinking"] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = [
            {"function": {"name": c.name, "arguments": c.arguments}} for c in reply.tool_calls
        ]
    return message


def _final(model: str, reply: FakeReply, message: dict[str, Any]) -> dict[str, Any]:
    return {
        "model": model,
        "created_at": _CREATED_AT,
        "message": message,
        "done": True,
        "done_reason": reply.finish_reason or "stop",
        "total_duration": 1000,
        "load_duration": 10,
        "prompt_eval_count": reply.prompt_tokens,
        "prompt_eval_duration": 100,
        "eval_count": reply.completion_tokens,
        "eval_duration": 100,
    }


async def _lines(model: str, reply: FakeReply, fault: str | None) -> AsyncIterator[str]:
    def line(payload: dict[str, Any]) -> str:
        return json.dumps(payload) + "\n"

    reasoning = reply.reasoning or ""
    for start in range(0, len(reasoning), 4):
        piece = {"role": "assistant", "content": "", "thinking": reasoning[start : start + 4]}
        yield line({"model": model, "created_at": _CREATED_AT, "message": piece, "done": False})
    text = reply.text or ""
    for start in range(0, len(text), 4):
        piece = {"role": "assistant", "content": text[start : start + 4]}
        yield line({"model": model, "created_at": _CREATED_AT, "message": piece, "done": False})
        if fault == "cut":
            return
        if fault == "overloaded_in_stream":  # Ollama reports failures after 200 as a line
            yield line({"error": "server overloaded, please retry shortly"})
            return
    for call in reply.tool_calls:
        function = {"name": call.name, "arguments": call.arguments}
        message = {"role": "assistant", "content": "", "tool_calls": [{"function": function}]}
        yield line({"model": model, "created_at": _CREATED_AT, "message": message, "done": False})
    yield line(_final(model, reply, {"role": "assistant", "content": ""}))
