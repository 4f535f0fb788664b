"""A started stream's deadline per chunk: one timer per stream, told apart from other cancels."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator

import pytest

from llm_service.balancer import Upstream
from llm_service.circuit import CircuitBreaker
from llm_service.config import ModelConfig
from llm_service.errors import GatewayError, UpstreamTimeout
from llm_service.registry import Deployment
from llm_service.stream_guard import guarded_stream
from llm_service.types import (
    AssistantMessage,
    ChatResponse,
    StreamDone,
    StreamEvent,
    TextDelta,
    Usage,
)

DONE = StreamDone(ChatResponse(AssistantMessage(content="ab"), "stop", Usage(), "m"))


def _upstream() -> Upstream:
    config = ModelConfig.model_validate({"name": "m", "provider": "openai"})
    upstream = Upstream(
        "m",
        Deployment(config, None, id="m"),
        CircuitBreaker(config.circuit_breaker, time.monotonic),
    )
    upstream.begin()  # as the router does before the first event
    return upstream


async def _guard(
    events: AsyncGenerator[StreamEvent, None],
    between_chunks: float,
    remaining: float = 60.0,
) -> tuple[AsyncGenerator[StreamEvent, None], Upstream, list[GatewayError | None]]:
    upstream = _upstream()
    verdicts: list[GatewayError | None] = []
    guarded = await guarded_stream(
        events,
        upstream,
        between_chunks=between_chunks,
        remaining=lambda: remaining,
        record=lambda _, outcome: verdicts.append(outcome),
    )
    return guarded, upstream, verdicts


async def _paced(gaps: list[float]) -> AsyncGenerator[StreamEvent, None]:
    for gap in gaps:
        await asyncio.sleep(gap)
        yield TextDelta("a")
    yield DONE


async def test_chunks_that_each_come_in_time_pass_however_long_the_stream_takes() -> None:
    # Together longer than between_chunks, each well within it: the one timer re-arms.
    guarded, upstream, verdicts = await _guard(_paced([0.1] * 6), between_chunks=0.4)
    started = time.monotonic()
    events = [event async for event in guarded]

    assert time.monotonic() - started > 0.4
    assert events[-1] == DONE
    assert len(events) == 7
    assert verdicts == [None]
    assert upstream.in_flight == 0


async def test_a_chunk_that_does_not_come_in_time_ends_the_stream_with_a_timeout() -> None:
    never = asyncio.Event()

    async def stalls() -> AsyncGenerator[StreamEvent, None]:
        yield TextDelta("a")
        await never.wait()
        yield DONE

    guarded, upstream, verdicts = await _guard(stalls(), between_chunks=0.1)
    assert await anext(guarded) == TextDelta("a")
    with pytest.raises(UpstreamTimeout, match=r"within 0\.1s"):
        await anext(guarded)

    assert isinstance(verdicts[0], UpstreamTimeout)
    assert upstream.in_flight == 0
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_a_slow_consumer_is_not_the_upstream_being_late() -> None:
    # The consumer takes longer than between_chunks between reads; the upstream never does.
    guarded, _, verdicts = await _guard(_paced([0.0, 0.0, 0.0]), between_chunks=0.1)
    events = []
    async for event in guarded:
        events.append(event)
        await asyncio.sleep(0.15)

    assert events[-1] == DONE
    assert verdicts == [None]


async def test_the_deadline_of_the_whole_call_bounds_each_wait() -> None:
    never = asyncio.Event()

    async def stalls() -> AsyncGenerator[StreamEvent, None]:
        await never.wait()
        yield DONE

    guarded, _, _ = await _guard(stalls(), between_chunks=60.0, remaining=0.05)
    with pytest.raises(UpstreamTimeout):
        await anext(guarded)


async def test_a_cancel_of_someone_else_is_not_turned_into_a_timeout() -> None:
    never = asyncio.Event()
    waiting = asyncio.Event()

    async def stalls() -> AsyncGenerator[StreamEvent, None]:
        waiting.set()
        await never.wait()
        yield DONE

    guarded, upstream, verdicts = await _guard(stalls(), between_chunks=60.0)
    reader = asyncio.ensure_future(anext(guarded))
    await waiting.wait()
    reader.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reader
    await guarded.aclose()

    assert verdicts == []  # no verdict on the deployment: the caller went away
    assert upstream.in_flight == 0
