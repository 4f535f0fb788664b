"""A started stream, bounded in time: a silent upstream becomes an error, never a hang."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from typing import TypeVar, cast

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
    try:
        yield None
        while True:
            try:
                async with asyncio.timeout(min(between_chunks, remaining())):
                    event = await anext(events)
            except StopAsyncIteration:
                outcome = UpstreamProtocolError(
                    f"{provider} ended the stream without finishing it", provider=provider
                )
                raise outcome from None
            except TimeoutError:
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
            yield event
            if isinstance(event, (StreamDone, ResponsesDone)):
                finished = True
                return
    finally:
        upstream.end()
        if finished or outcome is not None:
            record(upstream, outcome)
        else:
            upstream.breaker.release()  # the caller went away: no verdict on the deployment
        await events.aclose()


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
