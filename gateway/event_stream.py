"""Server-sent event responses that end as soon as the caller goes away."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, Mapping

from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from gateway.sse import SSE_HEADERS


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
