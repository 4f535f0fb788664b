"""Server-sent events: the one framer of ``id:`` / ``event:`` / ``data:`` lines, the streaming
response every event stream is sent with, and its OpenAPI description."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from typing import Any, cast

import orjson
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from chat_service.events import TurnEvent
from gateway.ready_together import send_ready_together

SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


def frame(data: bytes, event: str | None = None, event_id: int | None = None) -> bytes:
    """One event: its ``id:`` and ``event:`` lines when given, the ``data:`` line, and the blank
    line that ends it.

    ``data`` is one line: JSON as orjson writes it (a newline inside a string is escaped), or a
    marker such as ``[DONE]``. Every stream the gateway sends is framed here, each chunk of the
    hot routes included, so the common case (data alone) costs two concatenations, as before.
    """
    framed = b"data: " + data + b"\n\n"
    if event is not None:
        framed = b"event: " + event.encode() + b"\n" + framed
    if event_id is not None:
        framed = b"id: %d\n" % event_id + framed
    return framed


def stream_responses(description: str, json_too: bool = True) -> dict[int | str, dict[str, Any]]:
    """OpenAPI for a 200 that may be a server-sent event stream (so clients and contract tests
    know to expect one)."""
    content: dict[str, Any] = {"text/event-stream": {}}
    if json_too:
        content["application/json"] = {}
    return {200: {"description": description, "content": content}}


def encode(event: TurnEvent, event_id: int | None = None) -> bytes:
    """A turn event of the native conversation API."""
    return frame(orjson.dumps(event.data), event.type, event_id)


async def encode_all(events: AsyncIterator[TurnEvent]) -> AsyncIterator[bytes]:
    async for event in events:
        yield encode(event)


class EventStreamResponse(StreamingResponse):
    """``text/event-stream`` whose body stops, and is closed, when the client disconnects.

    Starlette's ``StreamingResponse`` watches for the disconnect in an anyio task group when the
    server speaks ASGI before 2.4 (uvicorn says 2.3): a task group, a second task, and a cancel
    scope whose ``cancel`` formats the task's repr, on every response; about a tenth of a
    streamed request's CPU. One plain watcher task that cancels the response's task does the same.
    """

    def __init__(
        self, content: AsyncIterable[bytes], headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(
            content, headers={**SSE_HEADERS, **(headers or {})}, media_type="text/event-stream"
        )

    async def stream_response(self, send: Send) -> None:
        start = {"type": "http.response.start", "status": self.status_code}
        await send({**start, "headers": self.raw_headers})
        # Every body here yields bytes (framed events).
        await send_ready_together(cast(AsyncIterator[bytes], self.body_iterator), send)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        task = asyncio.current_task()
        assert task is not None  # an ASGI server runs every request in a task
        caller_gone = False

        async def cancel_on_disconnect() -> None:
            nonlocal caller_gone
            while (await receive())["type"] != "http.disconnect":
                pass
            caller_gone = True
            task.cancel()

        watcher = asyncio.ensure_future(cancel_on_disconnect())
        try:
            await self.stream_response(send)
        except asyncio.CancelledError:
            if not caller_gone:
                raise  # a cancellation of someone else's (the drain, the server)
            task.uncancel()
        finally:
            watcher.cancel()
            # Closed now, not when collected, so the upstream connection is freed at once.
            aclose = getattr(self.body_iterator, "aclose", None)
            if aclose is not None:
                await aclose()
