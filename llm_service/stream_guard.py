"""A started stream, bounded in time: a silent upstream becomes an error, never a hang."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from typing import Any, TypeVar, cast

import structlog

from llm_service.balancer import Upstream
from llm_service.errors import GatewayError, InternalError, UpstreamProtocolError, UpstreamTimeout
from llm_service.types import ResponsesDone, ResponsesStreamEvent, StreamDone, StreamEvent

log = structlog.get_logger("llm_service.router")

Recorder = Callable[[Upstream, GatewayError | None], None]
# A chat stream, or a provider's own Responses API stream; each ends with its one done event.
E = TypeVar("E", StreamEvent, ResponsesStreamEvent)


async def guarded_stream(
    events: AsyncGenerator[E, None],
    upstream: Upstream,
    *,
    between_chunks: float,
    remaining: Callable[[], float],
    record: Recorder,
) -> AsyncGenerator[E, None]:
    """Yields the rest of ``events``; each must come within ``between_chunks`` and the deadline.

    Failures surface as ``GatewayError`` so the HTTP edge can end the stream with an error event.
    The deployment's in-flight count and circuit are settled however the stream ends, also when
    the consumer never reads it: the generator is started here, and closing a started generator
    (explicitly or when it is collected) runs its cleanup, which an unstarted one would skip.
    """
    guarded = _guarded(events, upstream, between_chunks, remaining, record)
    await anext(guarded)  # runs to the priming yield below
    return cast(AsyncGenerator[E, None], guarded)


async def _guarded(
    events: AsyncGenerator[E, None],
    upstream: Upstream,
    between_chunks: float,
    remaining: Callable[[], float],
    record: Recorder,
) -> AsyncGenerator[E | None, None]:
    provider = upstream.deployment.config.provider
    outcome: GatewayError | None = None
    finished = False
    late = LateChunk(asyncio.get_running_loop())
    try:
        yield None
        while True:
            late.wait(min(between_chunks, remaining()))
            try:
                event = await anext(events)
            except StopAsyncIteration:
                outcome = UpstreamProtocolError(
                    f"{provider} ended the stream without finishing it", provider=provider
                )
                raise outcome from None
            except (TimeoutError, asyncio.CancelledError) as exc:
                if isinstance(exc, asyncio.CancelledError) and not late.expired():
                    raise  # not the deadline's: the caller's, the drain's or the server's
                outcome = UpstreamTimeout(
                    f"{provider} stopped sending within {between_chunks}s", provider=provider
                )
                raise outcome from None
            except GatewayError as exc:
                outcome = exc
                raise
            except Exception as exc:  # still end with an error, which the stream reports
                outcome = internal_error(exc, upstream)
                raise outcome from exc
            late.arrived()
            yield event
            if isinstance(event, (StreamDone, ResponsesDone)):
                finished = True
                return
    finally:
        late.close()
        upstream.end()
        if finished or outcome is not None:
            record(upstream, outcome)
        else:
            upstream.breaker.release()  # the caller went away: no verdict on the deployment
        await events.aclose()


class LateChunk:
    """A deadline for each awaited chunk of one stream, with one timer for the whole stream.

    ``asyncio.timeout`` around each chunk made and cancelled a timer handle, and ran two more
    coroutines, for every chunk: about 6 % of a streamed request's CPU (docs/performance.md).
    Here the timer is armed when a wait starts and none is armed; when it fires it cancels the
    waiting task only if that wait is past its due time, and otherwise re-arms for that time.
    Due times never move earlier (each is now plus at most ``between_chunks``, capped by a fixed
    deadline), so a timer armed for an earlier wait never fires late. The cancellation is told
    from anyone else's as ``asyncio.timeout`` tells it, by the task's count of cancellations.
    """

    __slots__ = ("_cancelling", "_due", "_expired", "_loop", "_task", "_timer")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._task: asyncio.Task[Any] | None = None  # the task waiting for a chunk, if any
        self._cancelling = 0
        self._due = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._expired = False

    def wait(self, seconds: float) -> None:
        """The current task is about to await a chunk, which must come within ``seconds``."""
        # Given the loop, asyncio finds the task without `get_running_loop`, which in Python
        # 3.11 makes a getpid system call each time: one per chunk was 2 % of a stream's CPU.
        task = asyncio.current_task(self._loop)
        assert task is not None  # a stream is read in a task
        self._task = task
        self._cancelling = task.cancelling()
        self._due = self._loop.time() + seconds
        if self._timer is None:
            self._timer = self._loop.call_at(self._due, self._fire)

    def arrived(self) -> None:
        self._task = None

    def expired(self) -> bool:
        """Whether the ``CancelledError`` the waiting task got is this deadline's (and only
        its: a cancellation of anyone else's still propagates)."""
        task = self._task
        self._task = None
        return self._expired and task is not None and task.uncancel() <= self._cancelling

    def _fire(self) -> None:
        self._timer = None
        if self._task is None:
            return  # between chunks: the next wait arms the timer again
        if self._loop.time() < self._due:
            self._timer = self._loop.call_at(self._due, self._fire)
            return
        self._expired = True
        self._task.cancel()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def internal_error(exc: Exception, upstream: Upstream) -> InternalError:
    """An exception an adapter did not map is ours, not the provider's (adapters map every
    failure of their SDK and wire): logged with its traceback, and no verdict on the deployment.
    """
    log.error(
        "internal_error",
        alias=upstream.alias,
        deployment=upstream.deployment.id,
        exc_info=exc,
    )
    return InternalError(
        f"Internal error while calling the model `{upstream.alias}` ({type(exc).__name__})."
    )
