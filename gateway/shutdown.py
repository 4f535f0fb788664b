"""Graceful shutdown: refuse new work, let in-flight requests finish, then end what remains.

``Drain.run`` is started by the server on SIGTERM. From that moment ``/readyz`` answers 503 (the
load balancer stops sending), new requests get 503, and in-flight requests and streams have
``drain_seconds`` to finish. Streams still open after that end with a final SSE error event, so a
client learns why instead of seeing a silent close.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import orjson
import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.context import RequestContext
from gateway.errors import error_body

log = structlog.get_logger("gateway.shutdown")
# Probes and scrapes keep answering while draining: liveness must stay green, readiness says why.
EXEMPT_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
SHUTTING_DOWN = "shutting_down"
_BODY = error_body(
    "The gateway is shutting down; retry the request.", "service_unavailable", SHUTTING_DOWN
)
# After the drain deadline, how long cut-off streams get to write their error event.
_CUT_OFF_GRACE_SECONDS = 5.0


class Drain:
    def __init__(self, drain_seconds: float) -> None:
        self.drain_seconds = drain_seconds
        self.draining = False
        self.expired = False
        # The requests' own tasks, so the drain can end them without running each request in a
        # task of its own (two extra tasks a request were a tenth of a streamed request's start).
        self._running: set[asyncio.Task[object]] = set()
        self._idle = asyncio.Event()
        self._idle.set()
        # Told of every change of in_flight or draining (multiprocess metrics; None otherwise).
        self.on_change: Callable[[Drain], None] | None = None

    @property
    def in_flight(self) -> int:
        return len(self._running)

    def enter(self, task: asyncio.Task[object]) -> None:
        self._running.add(task)
        self._idle.clear()
        if self.on_change is not None:
            self.on_change(self)

    def leave(self, task: asyncio.Task[object]) -> None:
        self._running.discard(task)
        if not self._running:
            self._idle.set()
        if self.on_change is not None:
            self.on_change(self)

    async def run(self) -> None:
        """Drain, then return once nothing is in flight (or the cut-off grace ran out too)."""
        self.draining = True
        if self.on_change is not None:
            self.on_change(self)
        log.info("shutdown_draining", in_flight=self.in_flight, drain_seconds=self.drain_seconds)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.drain_seconds):
                await self._idle.wait()
        if self._running:
            log.warning("shutdown_drain_expired", in_flight=self.in_flight)
            self.expired = True
            for task in self._running:
                task.cancel()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_CUT_OFF_GRACE_SECONDS):
                    await self._idle.wait()
        log.info("shutdown_drained", in_flight=self.in_flight)


class DrainMiddleware:
    """Counts in-flight requests, refuses new ones while draining, cuts off what outlives it."""

    def __init__(self, app: ASGIApp, drain: Drain) -> None:
        self.app = app
        self.drain = drain

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in EXEMPT_PATHS:
            await self.app(scope, receive, send)
            return
        if self.drain.draining:
            _mark(scope)
            await _send_error(send, 503)
            return
        task = asyncio.current_task()
        assert task is not None  # an ASGI server runs every request in a task
        self.drain.enter(task)
        try:
            await self._serve(task, scope, receive, send)
        finally:
            self.drain.leave(task)

    async def _serve(
        self, task: asyncio.Task[object], scope: Scope, receive: Receive, send: Send
    ) -> None:
        started = finished = False

        async def tracking_send(message: Message) -> None:
            nonlocal started, finished
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                finished = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except asyncio.CancelledError:
            if not self.drain.expired:
                raise  # not the drain's doing: the server's or the caller's
            task.uncancel()
        else:
            return
        _mark(scope)
        if finished:
            return
        if started:
            # Mid-stream: the status is already sent; the last event says why it ends.
            event = b"data: " + orjson.dumps(_BODY) + b"\n\n"
            await send({"type": "http.response.body", "body": event, "more_body": False})
        else:
            await _send_error(send, 503)


def _mark(scope: Scope) -> None:
    context: RequestContext | None = scope.get("state", {}).get("context")
    if context is not None:
        context.error_type = SHUTTING_DOWN


async def _send_error(send: Send, status: int) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"connection", b"close"),
                (b"retry-after", b"1"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": orjson.dumps(_BODY)})
