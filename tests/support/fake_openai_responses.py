"""The Responses API part of the OpenAI fake (``POST /v1/responses``), whole and streamed.

Shapes follow the official openai SDK's types (``openai.types.responses``); a stream sends its
events in OpenAI's order, each output item opened, filled and closed before the next:
``response.created``, ``response.in_progress``; a reasoning item (``output_item.added``,
``reasoning_summary_part.added``, ``reasoning_summary_text.delta``..., ``..._text.done``,
``..._part.done``, ``output_item.done``); a message (``output_item.added``,
``content_part.added``, ``output_text.delta``..., ``output_text.done``, ``content_part.done``,
``output_item.done``); each function call (``output_item.added``,
``function_call_arguments.delta``..., ``..._arguments.done``, ``output_item.done``); last
``response.completed`` (``response.incomplete`` for a ``length`` finish).

Like OpenAI with ``store: false``, the fake keeps nothing: a reasoning item given back in
``input`` must carry the ``encrypted_content`` the fake issued (asked for with
``include: ["reasoning.encrypted_content"]``), and a function call it answered alongside a
reasoning item must come back with that item, or the request is refused as OpenAI refuses it.
"""

from __future__ import annotations

import itertools
import json
import secrets
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from llm_service.types import JSON

if TYPE_CHECKING:
    from tests.support.fake_openai import FakeReply, FakeToolCall

ENCRYPTED = "reasoning.encrypted_content"


@dataclass
class ResponsesMemory:
    """What a stateless OpenAI can still check: the encrypted reasoning it issued, and which
    reasoning item each function call came with."""

    encrypted: set[str] = field(default_factory=set)
    call_reasoning: dict[str, str] = field(default_factory=dict)  # fc id -> rs id

    def refusal(self, body: JSON) -> str | None:
        """Why OpenAI would refuse this request's input, or None."""
        if body.get("previous_response_id"):
            return f"Previous response with id '{body['previous_response_id']}' not found."
        items = body.get("input")
        if not isinstance(items, list):
            return None
        reasoning_ids = {i.get("id") for i in items if i.get("type") == "reasoning"}
        for item in items:
            if (
                item.get("type") == "reasoning"
                and item.get("encrypted_content") not in self.encrypted
            ):
                return (
                    f"Item with id '{item.get('id')}' not found. Items are not persisted when "
                    "`store` is set to false. Try again with `store` set to true, or remove this "
                    "item from your input."
                )
            needed = self.call_reasoning.get(str(item.get("id")))
            if item.get("type") == "function_call" and needed and needed not in reasoning_ids:
                return (
                    f"Item '{item.get('id')}' of type 'function_call' was provided without its "
                    f"required 'reasoning' item: '{needed}'."
                )
        return None


def echo_text(body: JSON) -> str:
    items = body.get("input")
    if isinstance(items, str):
        return f"fake says: {items}"
    for item in reversed(items or []):
        if item.get("role") == "user":
            content = item.get("content")
            return f"fake says: {content if isinstance(content, str) else 'parts'}"
    return "fake says: nothing"


def usage_json(reply: FakeReply) -> JSON:
    return {
        "input_tokens": reply.prompt_tokens,
        "input_tokens_details": {"cached_tokens": reply.cached_tokens},
        "output_tokens": reply.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": reply.reasoning_tokens},
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }


def _id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


@dataclass
class _Answer:
    """One reply as output items, with the ids and encrypted content the fake issued."""

    body: JSON
    reply: FakeReply
    calls: list[FakeToolCall]
    memory: ResponsesMemory
    response_id: str = field(default_factory=lambda: _id("resp"))

    def items(self) -> list[JSON]:
        out: list[JSON] = []
        reasoning_id = None
        if self.reply.reasoning is not None:
            reasoning_id = _id("rs")
            encrypted = None
            if ENCRYPTED in (self.body.get("include") or []):
                encrypted = f"enc_{secrets.token_hex(16)}"
                self.memory.encrypted.add(encrypted)
            summary = [{"type": "summary_text", "text": self.reply.reasoning}]
            out.append(
                {
                    "id": reasoning_id,
                    "type": "reasoning",
                    "summary": summary,
                    "encrypted_content": encrypted,
                }
            )
        if self.reply.text is not None:
            out.append(
                {
                    "id": _id("msg"),
                    "type": "message",
                    "status": "completed",
                    "role": "assistant",
                    "content": [_text_part(self.reply.text)],
                }
            )
        for call in self.calls:
            call_item = {
                "id": _id("fc"),
                "type": "function_call",
                "status": "completed",
                "arguments": json.dumps(call.arguments),
                "call_id": call.id,
                "name": call.name,
            }
            if reasoning_id is not None:
                self.memory.call_reasoning[call_item["id"]] = reasoning_id
            out.append(call_item)
        return out

    def response(self, status: str, output: list[JSON], usage: JSON | None) -> JSON:
        body = self.body
        return {
            "id": self.response_id,
            "object": "response",
            "created_at": int(time.time()),
            "status": status,
            "background": False,
            "error": None,
            "incomplete_details": {"reason": "max_output_tokens"}
            if status == "incomplete"
            else None,
            "instructions": body.get("instructions"),
            "max_output_tokens": body.get("max_output_tokens"),
            "model": body["model"],
            "output": output,
            "parallel_tool_calls": body.get("parallel_tool_calls", True),
            "previous_response_id": None,
            "reasoning": body.get("reasoning") or {"effort": None, "summary": None},
            "store": body.get("store", True),
            "temperature": body.get("temperature", 1.0),
            "text": body.get("text") or {"format": {"type": "text"}},
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools", []),
            "top_p": body.get("top_p", 1.0),
            "truncation": body.get("truncation", "disabled"),
            "usage": usage,
            "user": body.get("user"),
            "metadata": body.get("metadata") or {},
        }

    @property
    def status(self) -> str:
        return "incomplete" if self.reply.finish_reason == "length" else "completed"


def _text_part(text: str) -> JSON:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def whole(body: JSON, reply: FakeReply, calls: list[FakeToolCall], memory: ResponsesMemory) -> JSON:
    answer = _Answer(body, reply, calls, memory)
    return answer.response(answer.status, answer.items(), usage_json(reply))


Event = Callable[..., str]


def events(
    body: JSON, reply: FakeReply, calls: list[FakeToolCall], memory: ResponsesMemory
) -> AsyncIterator[str]:
    answer = _Answer(body, reply, calls, memory)
    output = answer.items()
    numbers = itertools.count()

    def event(kind: str, **fields: Any) -> str:
        payload = {"type": kind, "sequence_number": next(numbers), **fields}
        return f"event: {kind}\ndata: {json.dumps(payload)}\n\n"

    async def generate() -> AsyncIterator[str]:
        started = answer.response("in_progress", [], None)
        yield event("response.created", response=started)
        yield event("response.in_progress", response=started)
        for index, item in enumerate(output):
            for chunk in _ITEM_EVENTS[item["type"]](event, index, item):
                yield chunk
            yield event("response.output_item.done", output_index=index, item=item)
        final = answer.response(answer.status, output, usage_json(reply))
        yield event(f"response.{answer.status}", response=final)

    return generate()


def _reasoning_events(event: Event, index: int, item: JSON) -> Iterator[str]:
    opened = {**item, "summary": [], "encrypted_content": None}
    yield event("response.output_item.added", output_index=index, item=opened)
    for number, part in enumerate(item["summary"]):
        at = {"item_id": item["id"], "output_index": index, "summary_index": number}
        empty = {"type": "summary_text", "text": ""}
        yield event("response.reasoning_summary_part.added", **at, part=empty)
        for piece in _pieces(part["text"], 6):
            yield event("response.reasoning_summary_text.delta", **at, delta=piece)
        yield event("response.reasoning_summary_text.done", **at, text=part["text"])
        yield event("response.reasoning_summary_part.done", **at, part=part)


def _message_events(event: Event, index: int, item: JSON) -> Iterator[str]:
    opened = {**item, "status": "in_progress", "content": []}
    yield event("response.output_item.added", output_index=index, item=opened)
    at = {"item_id": item["id"], "output_index": index, "content_index": 0}
    yield event("response.content_part.added", **at, part=_text_part(""))
    text = item["content"][0]["text"]
    for piece in _pieces(text, 4):
        yield event("response.output_text.delta", **at, delta=piece, logprobs=[])
    yield event("response.output_text.done", **at, text=text, logprobs=[])
    yield event("response.content_part.done", **at, part=item["content"][0])


def _call_events(event: Event, index: int, item: JSON) -> Iterator[str]:
    opened = {**item, "status": "in_progress", "arguments": ""}
    yield event("response.output_item.added", output_index=index, item=opened)
    at = {"item_id": item["id"], "output_index": index}
    for piece in _pieces(item["arguments"], 5):
        yield event("response.function_call_arguments.delta", **at, delta=piece)
    arguments = item["arguments"]
    yield event(
        "response.function_call_arguments.done", **at, name=item["name"], arguments=arguments
    )


_ITEM_EVENTS = {
    "reasoning": _reasoning_events,
    "message": _message_events,
    "function_call": _call_events,
}


def error_event(error: JSON, sequence_number: int) -> str:
    payload = {
        "type": "error",
        "sequence_number": sequence_number,
        "code": error.get("code"),
        "message": error.get("message", "fake failure"),
        "param": None,
    }
    return f"event: error\ndata: {json.dumps(payload)}\n\n"


def _pieces(text: str, size: int) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start : start + size]
