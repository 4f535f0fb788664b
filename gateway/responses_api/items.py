"""Responses API items as the gateway keeps them: a request's input as sent upstream, the same
items with ids for ``GET /v1/responses/{id}/input_items``, and canonical history as items for
responses stored before items were kept."""

from __future__ import annotations

from gateway.responses_api.convert import function_call_item, message_item, new_id
from gateway.responses_api.schemas import ResponsesRequest
from llm_service.assemble import arguments_json
from llm_service.errors import InvalidRequest
from llm_service.types import (
    JSON,
    AssistantMessage,
    Message,
    SystemMessage,
    TextPart,
    ToolResultMessage,
    UserMessage,
)

_ID_PREFIXES = {"message": "msg", "function_call": "fc", "function_call_output": "fco"}


def request_items(body: ResponsesRequest) -> list[JSON]:
    """The request's ``input`` as items (a string is one user message), as the caller wrote
    them otherwise: a provider's own Responses API is sent exactly these."""
    if isinstance(body.input, str):
        return [{"type": "message", "role": "user", "content": body.input}]
    return [dict(item) for item in body.input]


def listed(items: list[JSON]) -> list[JSON]:
    """Input items as ``input_items`` lists them: each with an ``id`` and a ``type``, a
    message's content as parts, as the official SDK's ``ResponseItem`` types have them."""
    out = []
    for item in items:
        kind = item.get("type", "message")
        entry = {**item, "type": kind}
        entry.setdefault("id", new_id(_ID_PREFIXES.get(kind, "item")))
        if kind == "message":
            entry.setdefault("status", "completed")
            content = entry.get("content")
            if isinstance(content, str):
                part = "output_text" if entry.get("role") == "assistant" else "input_text"
                entry["content"] = [{"type": part, "text": content}]
        out.append(entry)
    return out


def item_page(items: list[JSON], after: str | None, limit: int, order: str) -> JSON:
    """One page of ``input_items``, as the official SDK's cursor pages read it."""
    ordered = items if order == "asc" else items[::-1]
    if after is not None:
        ids = [item["id"] for item in ordered]
        if after not in ids:
            message = f"No input item with id `{after}` in this response."
            raise InvalidRequest(message, param="after")
        ordered = ordered[ids.index(after) + 1 :]
    page = ordered[:limit]
    return {
        "object": "list",
        "data": page,
        "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None,
        "has_more": len(ordered) > limit,
    }


def from_canonical(messages: list[Message]) -> list[JSON]:
    """Canonical history as input items (for a response stored before items were kept)."""
    items: list[JSON] = []
    for message in messages:
        if isinstance(message, (SystemMessage, ToolResultMessage)) or (
            isinstance(message, UserMessage) and isinstance(message.content, str)
        ):
            items.append(_simple(message))
        elif isinstance(message, UserMessage):
            text = "".join(p.text for p in message.content if isinstance(p, TextPart))
            items.append({"type": "message", "role": "user", "content": text})
        else:
            items.extend(_assistant(message))
    return items


def _simple(message: SystemMessage | ToolResultMessage | UserMessage) -> JSON:
    if isinstance(message, ToolResultMessage):
        return {
            "type": "function_call_output",
            "call_id": message.tool_call_id,
            "output": _output(message),
        }
    role = "system" if isinstance(message, SystemMessage) else "user"
    return {"type": "message", "role": role, "content": message.content}


def _output(result: ToolResultMessage) -> str | list[JSON]:
    if isinstance(result.content, str):
        return result.content
    return [
        {"type": "input_text", "text": p.text}
        if isinstance(p, TextPart)
        else {"type": "input_image", "image_url": p.url, "detail": p.detail or "auto"}
        for p in result.content
    ]


def _assistant(message: AssistantMessage) -> list[JSON]:
    items = [message_item(new_id("msg"), message.content)] if message.content else []
    for call in message.tool_calls:
        items.append(function_call_item(new_id("fc"), call.id, call.name, arguments_json(call)))
    return items
