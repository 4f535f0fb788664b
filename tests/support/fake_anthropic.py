"""A wire-faithful fake of the Anthropic Messages API (``POST /v1/messages``).

Tests queue replies (the ``FakeReply`` of the OpenAI fake, or a ``Fault``); the fake answers in
order or echoes. Streams follow the real event sequence: ``message_start``, ``ping``, per block
``content_block_start`` / deltas / ``content_block_stop``, ``message_delta``, ``message_stop``.
Tool input streams as ``input_json_delta`` pieces, the first one empty, as the API sends them.

Like the real API it refuses what the real API refuses (400 ``invalid_request_error``): a missing
``max_tokens``, roles other than user/assistant, tool ids or names outside the allowed
characters, a tool_result that does not answer the previous assistant turn or comes after text,
a tool schema whose root is not an object or is a union, ``tool_choice`` without tools.

Thinking: a fake given ``thinking`` blocks, or asked for ``thinking`` (enabled or adaptive), answers
with thinking first (signed, or redacted; asked, it signs ``sig-<model>-<n>``) and then holds a
request to what the real API demands of a model with extended thinking on: the assistant turn a
tool loop continues must start with its thinking block, and a thinking block sent back must be
one this model gave, signature and text unchanged (redacted ones, unchanged). It refuses thinking
with a forced tool, a budget under 1024 or not under ``max_tokens``.

Prompt caching: more than four ``cache_control`` breakpoints, one on a thinking block or an empty
text block, a type other than ``ephemeral`` or a ``ttl`` other than 5m/1h are refused, as the
real API does. ``output_config.format`` must be a ``json_schema`` with an object schema.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.support.fake_openai import FakeReply

_ID = re.compile(r"^[A-Za-z0-9_-]+$")
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass
class Fault:
    """A broken answer: a body that is not JSON, a stream cut off mid-way, or a stream that
    turns into an ``overloaded_error`` event after it started (as the real API does)."""

    kind: Literal["malformed", "cut", "overloaded_in_stream"]


@dataclass
class FakeThinking:
    """A thinking block; ``redacted``: a ``redacted_thinking`` block whose data is ``text``."""

    text: str
    signature: str = "sig-fake"
    redacted: bool = False


@dataclass
class FakeAnthropic:
    replies: deque[FakeReply | Fault] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    # Thinking blocks put before the content of the next answers (extended thinking is on).
    thinking: list[FakeThinking] = field(default_factory=list)
    # Every thinking block answered so far, with the model that signed it: only these come back.
    issued: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def queue(self, *replies: FakeReply | Fault) -> None:
        self.replies.extend(replies)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/messages", self._messages, methods=["POST"])])

    async def _messages(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        thinks = bool(self.thinking) or _thinking_on(body)
        problem = _invalid(body) or (thinks and _invalid_thinking(body, self.issued))
        if problem:
            return _error(400, "invalid_request_error", problem)
        reply = self.replies.popleft() if self.replies else _echo(body)
        if isinstance(reply, Fault) and reply.kind == "malformed":
            return Response("<html>bad gateway</html>", 200, media_type="application/json")
        if isinstance(reply, FakeReply) and reply.status != 200:
            error = reply.error or {"type": "api_error", "message": "fake failure"}
            return _error(reply.status, error["type"], error["message"], reply.headers, error)
        message = _message(body, reply if isinstance(reply, FakeReply) else FakeReply("partial"))
        if isinstance(reply, FakeReply) and (thinks or reply.reasoning):
            given = [*self.thinking, *([FakeThinking(reply.reasoning)] if reply.reasoning else [])]
            if not given:
                given = [
                    FakeThinking("Thinking it over.", f"sig-{body['model']}-{len(self.issued)}")
                ]
            blocks = [_thinking_block(t) for t in given]
            self.issued.extend((body["model"], block) for block in blocks)
            message["content"][:0] = blocks
        if body.get("stream"):
            fault = reply.kind if isinstance(reply, Fault) else None
            return StreamingResponse(_events(message, fault), media_type="text/event-stream")
        return JSONResponse(message)


def _error(
    status: int,
    error_type: str,
    message: str,
    headers: dict[str, str] | None = None,
    extra: dict[str, Any] | None = None,
) -> JSONResponse:
    error = {**(extra or {}), "type": error_type, "message": message}
    body = {"type": "error", "error": error, "request_id": "req_fake"}
    return JSONResponse(body, status, headers=headers)


def _thinking_on(body: dict[str, Any]) -> bool:
    return (body.get("thinking") or {}).get("type") in ("enabled", "adaptive")


def _invalid(body: dict[str, Any]) -> str | None:
    if not isinstance(body.get("max_tokens"), int):
        return "max_tokens: Field required"
    problem = _invalid_options(body) or _invalid_cache(body)
    if problem:
        return problem
    for tool in body.get("tools") or ():
        if not _TOOL_NAME.match(tool.get("name", "")):
            return f"tools: name {tool.get('name')!r} does not match ^[a-zA-Z0-9_-]{{1,64}}$"
        schema = tool.get("input_schema") or {}
        if schema.get("type") != "object" or any(k in schema for k in ("anyOf", "oneOf", "allOf")):
            return "tools: input_schema must be an object schema without a root union"
    if "tool_choice" in body and not body.get("tools"):
        return "tool_choice may only be specified while providing tools"
    return _invalid_messages(body["messages"])


def _invalid_options(body: dict[str, Any]) -> str | None:
    thinking = body.get("thinking")
    if thinking is not None:
        if thinking.get("type") not in ("enabled", "adaptive", "disabled"):
            return "thinking.type: Input tag does not match any of the expected tags"
        budget = thinking.get("budget_tokens")
        if thinking["type"] == "enabled" and (
            not isinstance(budget, int) or not 1024 <= budget < body["max_tokens"]
        ):
            return "thinking.budget_tokens: must be >= 1024 and less than max_tokens"
        forced = (body.get("tool_choice") or {}).get("type") in ("any", "tool")
        if _thinking_on(body) and forced:
            return "Thinking may not be enabled when tool_choice forces tool use."
    fmt = (body.get("output_config") or {}).get("format")
    if fmt is not None and (
        fmt.get("type") != "json_schema" or (fmt.get("schema") or {}).get("type") != "object"
    ):
        return "output_config.format: a json_schema format with an object schema is required"
    if "seed" in body or "response_format" in body or "reasoning_effort" in body:
        return "Extra inputs are not permitted"
    return None


def _cache_points(value: Any) -> list[tuple[dict[str, Any], bool]]:
    """Every ``cache_control`` in the body, with whether it sits on a thinking block."""
    if isinstance(value, list):
        return [point for item in value for point in _cache_points(item)]
    if not isinstance(value, dict):
        return []
    kind = value.get("type")
    points = []
    if "cache_control" in value:
        points.append((value, kind in ("thinking", "redacted_thinking")))
    for key, item in value.items():
        # A tool's input and schema are the caller's data, not blocks.
        if key not in ("cache_control", "input", "input_schema"):
            points.extend(_cache_points(item))
    return points


def _invalid_cache(body: dict[str, Any]) -> str | None:
    parts = {key: body.get(key) for key in ("system", "tools", "messages")}
    points = _cache_points(parts)
    if len(points) > 4:
        return f"A maximum of 4 blocks with cache_control may be provided. Found {len(points)}."
    for block, on_thinking in points:
        cache = block["cache_control"]
        if on_thinking:
            return "cache_control cannot be set on thinking blocks"
        if cache.get("type") != "ephemeral" or cache.get("ttl", "5m") not in ("5m", "1h"):
            return "cache_control: type must be 'ephemeral' and ttl '5m' or '1h'"
        if block.get("type") == "text" and not block.get("text"):
            return "cache_control cannot be set for empty text blocks"
    top = body.get("cache_control")
    if top is not None and top.get("type") != "ephemeral":
        return "cache_control.type: Input should be 'ephemeral'"
    return None


def _invalid_messages(messages: list[dict[str, Any]]) -> str | None:
    pending: set[str] = set()
    for number, message in enumerate(messages):
        if message.get("role") not in ("user", "assistant"):
            return f"messages.{number}.role: Input should be 'user' or 'assistant'"
        blocks = message["content"]
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        problem = _invalid_blocks(number, message["role"], blocks, pending)
        if problem:
            return problem
        pending = {b["id"] for b in blocks if b.get("type") == "tool_use"}
    return None


def _invalid_blocks(
    number: int, role: str, blocks: list[dict[str, Any]], pending: set[str]
) -> str | None:
    seen_other = False
    for block in blocks:
        kind = block.get("type")
        if kind == "tool_use" and (role != "assistant" or not _ID.match(block.get("id", ""))):
            return f"messages.{number}: tool_use ids must match ^[a-zA-Z0-9_-]+$"
        if kind == "tool_result":
            if role != "user" or seen_other:
                return f"messages.{number}: tool_result blocks must come first in a user turn"
            if block.get("tool_use_id") not in pending:
                return f"messages.{number}: unexpected tool_use_id {block.get('tool_use_id')}"
            problem = _invalid_result_content(number, block)
            if problem:
                return problem
        else:
            seen_other = True
        if kind == "text" and not block.get("text"):
            return f"messages.{number}: text content blocks must be non-empty"
    return None


_MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")


def _invalid_result_content(number: int, block: dict[str, Any]) -> str | None:
    """A tool_result holds a string or text and image blocks, as Anthropic validates them."""
    if not isinstance(block.get("is_error", False), bool):
        return f"messages.{number}: tool_result.is_error: Input should be a valid boolean"
    content = block.get("content", "")
    if isinstance(content, str):
        return None
    for item in content:
        kind = item.get("type")
        if kind == "text" and not item.get("text"):
            return f"messages.{number}: text content blocks must be non-empty"
        if kind == "image":
            source = item.get("source") or {}
            if source.get("type") == "base64" and source.get("media_type") in _MEDIA_TYPES:
                continue
            if source.get("type") == "url" and str(source.get("url", "")).startswith("http"):
                continue
            return f"messages.{number}: tool_result image: invalid source {source!r}"
        if kind not in ("text", "image"):
            return f"messages.{number}: tool_result content: unexpected block type {kind!r}"
    return None


def _echo(body: dict[str, Any]) -> FakeReply:
    last = body["messages"][-1]["content"]
    text = last if isinstance(last, str) else " ".join(b.get("text", "") for b in last)
    return FakeReply(text=f"fake says: {text.strip() or 'parts'}")


def _thinking_block(thinking: FakeThinking) -> dict[str, Any]:
    if thinking.redacted:
        return {"type": "redacted_thinking", "data": thinking.text}
    return {"type": "thinking", "thinking": thinking.text, "signature": thinking.signature}


_THINKING_FIRST = (
    "messages.{number}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
    "`{found}`. When `thinking` is enabled, a final `assistant` message must start with a "
    "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We "
    "recommend you include thinking blocks from previous turns. To avoid this requirement, "
    "disable `thinking`. Please consult our documentation at "
    "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
)


def _invalid_thinking(body: dict[str, Any], issued: list[tuple[str, dict[str, Any]]]) -> str | None:
    messages = body["messages"]
    for number, message in enumerate(messages):
        blocks = message["content"] if isinstance(message["content"], list) else []
        for index, block in enumerate(blocks):
            thinking = block.get("type") in ("thinking", "redacted_thinking")
            if thinking and (body["model"], block) not in issued:
                return f"messages.{number}.content.{index}: Invalid `signature` in `thinking` block"
    # A tool loop continues the last assistant turn: it must open with its thinking.
    if len(messages) >= 2 and messages[-2]["role"] == "assistant":
        blocks = messages[-2]["content"]
        types = [b.get("type") for b in blocks] if isinstance(blocks, list) else ["text"]
        if "tool_use" in types and types[0] not in ("thinking", "redacted_thinking"):
            return _THINKING_FIRST.format(number=len(messages) - 2, found=types[0])
    return None


def _message(body: dict[str, Any], reply: FakeReply) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for index, call in enumerate(reply.tool_calls):
        call_id = call.id or f"toolu_fake{len(body['messages'])}{index}"
        content.append(
            {"type": "tool_use", "id": call_id, "name": call.name, "input": call.arguments}
        )
    stop = reply.finish_reason or ("tool_use" if reply.tool_calls else "end_turn")
    # Stopped by a stop sequence: the first one the request gave.
    sequence = (body.get("stop_sequences") or [None])[0] if stop == "stop_sequence" else None
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": content,
        "stop_reason": stop,
        "stop_sequence": sequence,
        "usage": {
            # Anthropic counts cache reads and writes apart from ``input_tokens``.
            "input_tokens": reply.prompt_tokens - reply.cached_tokens - reply.cache_write_tokens,
            "output_tokens": reply.completion_tokens,
            "cache_creation_input_tokens": reply.cache_write_tokens,
            "cache_read_input_tokens": reply.cached_tokens,
        },
    }


def _sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


def _block_events(index: int, block: dict[str, Any]) -> list[str]:
    kind = block["type"]
    start: dict[str, Any]
    deltas: list[dict[str, Any]]
    if kind == "text":
        text = block["text"]
        start = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": text[i : i + 4]} for i in range(0, len(text), 4)]
    elif kind == "redacted_thinking":
        start, deltas = block, []  # arrives whole, in its start event
    elif kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [
            {"type": "thinking_delta", "thinking": block["thinking"]},
            {"type": "signature_delta", "signature": block["signature"]},
        ]
    else:
        start = {**block, "input": {}}
        arguments = json.dumps(block["input"]) if block["input"] else ""
        pieces = [arguments[i : i + 5] for i in range(0, len(arguments), 5)]
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in ["", *pieces]]
    events = [
        _sse(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        )
    ]
    events += [
        _sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
        for d in deltas
    ]
    events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events


async def _events(message: dict[str, Any], fault: str | None) -> AsyncIterator[str]:
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    yield _sse("message_start", {"type": "message_start", "message": start})
    yield _sse("ping", {"type": "ping"})
    if fault == "overloaded_in_stream":
        error = {"type": "overloaded_error", "message": "Overloaded"}
        yield _sse("error", {"type": "error", "error": error})
        return
    for index, block in enumerate(message["content"]):
        for event in _block_events(index, block):
            yield event
            if fault == "cut":
                return  # the body ends after the first block event
    delta = {"stop_reason": message["stop_reason"], "stop_sequence": message["stop_sequence"]}
    yield _sse(
        "message_delta",
        {
            "type": "message_delta",
            "delta": delta,
            "usage": {"output_tokens": usage["output_tokens"]},
        },
    )
    yield _sse("message_stop", {"type": "message_stop"})
