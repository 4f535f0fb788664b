"""Typed server-sent events for the native conversation API."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson

from chat_service.events import TurnEvent

SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


def stream_responses(description: str, json_too: bool = True) -> dict[int | str, dict[str, Any]]:
    """OpenAPI for a 200 that may be a server-sent event stream (so clients and contract tests
    know to expect one)."""
    content: dict[str, Any] = {"text/event-stream": {}}
    if json_too:
        content["application/json"] = {}
    return {200: {"description": description, "content": content}}


def encode(event: TurnEvent, event_id: int | None = None) -> bytes:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event.type}\ndata: ".encode() + orjson.dumps(event.data) + b"\n\n"


async def encode_all(events: AsyncIterator[TurnEvent]) -> AsyncIterator[bytes]:
    async for event in events:
        yield encode(event)
