"""The router against a real fake OpenAI server: which failures are retried, and how."""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator

import pytest

from llm_service.config import ModelConfig
from llm_service.errors import (
    InternalError,
    UpstreamAuthError,
    UpstreamBadRequest,
    UpstreamOverloaded,
    UpstreamProtocolError,
    UpstreamQuotaExceeded,
    UpstreamRateLimited,
    UpstreamServerError,
    UpstreamTimeout,
)
from llm_service.registry import ModelRegistry
from llm_service.router import Router
from llm_service.types import (
    ChatRequest,
    ChatResponse,
    SamplingParams,
    StreamDone,
    StreamEvent,
    TextDelta,
)
from tests.llm_service.routing_support import HELLO, FakeTime, openai_model, router_for
from tests.support.fake_ollama import FakeOllama
from tests.support.fake_openai import FakeOpenAI, FakeReply
from tests.support.servers import serve

Fake = tuple[FakeOpenAI, str]
FAST = {"read": 0.5, "first_byte": 0.5, "between_chunks": 0.5}


async def test_429_waits_for_retry_after_then_succeeds(fake_openai: Fake) -> None:
    fake, url = fake_openai
    fake.queue(FakeReply(status=429, headers={"retry-after": "2"}), FakeReply(text="ok"))
    time = FakeTime()
    async with router_for(time, openai_model("gpt", url)) as router:
        response, served = await router.complete("gpt", HELLO)

    assert response.message.content == "ok"
    assert (served.alias, served.provider) == ("gpt", "openai")
    assert len(fake.requests) == 2
    assert time.sleeps[0] >= 2


@pytest.mark.parametrize("status", [408, 500, 502, 503, 504, 529])
async def test_retryable_statuses_are_retried(fake_openai: Fake, status: int) -> None:
    fake, url = fake_openai
    fake.queue(FakeReply(status=status), FakeReply(status=status), FakeReply(text="third time"))
    time = FakeTime()
    async with router_for(time, openai_model("gpt", url)) as router:
        response, _ = await router.complete("gpt", HELLO)

    assert response.message.content == "third time"
    assert len(fake.requests) == 3
    assert len(time.sleeps) == 2
    assert time.sleeps[1] > time.sleeps[0] * 0.9  # exponential, jitter aside


async def test_at_most_three_attempts(fake_openai: Fake) -> None:
    fake, url = fake_openai
    fake.outage = FakeReply(status=529, error={"message": "overloaded", "type": "overloaded"})
    async with router_for(FakeTime(), openai_model("gpt", url)) as router:
        with pytest.raises(UpstreamOverloaded):
            await router.complete("gpt", HELLO)

    assert len(fake.requests) == 3


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (FakeReply(status=400, error={"message": "bad", "type": "invalid"}), UpstreamBadRequest),
        (FakeReply(status=401, error={"message": "key", "type": "auth"}), UpstreamAuthError),
        (
            FakeReply(
                status=429,
                error={"message": "pay", "type": "billing", "code": "insufficient_quota"},
            ),
            UpstreamQuotaExceeded,
        ),
        (FakeReply(garbage=True), UpstreamProtocolError),
    ],
)
async def test_refusals_and_garbage_are_not_retried(
    fake_openai: Fake, reply: FakeReply, error: type[Exception]
) -> None:
    fake, url = fake_openai
    fake.queue(reply)
    async with router_for(FakeTime(), openai_model("gpt", url)) as router:
        with pytest.raises(error):
            await router.complete("gpt", HELLO)

    assert len(fake.requests) == 1


async def test_a_long_retry_after_is_handed_to_the_caller_not_waited(fake_openai: Fake) -> None:
    fake, url = fake_openai
    fake.queue(FakeReply(status=429, headers={"retry-after": "120"}))
    time = FakeTime()
    async with router_for(time, openai_model("gpt", url)) as router:
        with pytest.raises(UpstreamRateLimited) as caught:
            await router.complete("gpt", HELLO)

    assert caught.value.retry_after == 120
    assert time.sleeps == []


async def test_a_hanging_upstream_times_out_and_the_retry_answers(fake_openai: Fake) -> None:
    fake, url = fake_openai
    fake.queue(FakeReply(hang=True), FakeReply(text="awake"))
    async with router_for(FakeTime(), openai_model("gpt", url, timeouts=FAST)) as router:
        response, _ = await router.complete("gpt", HELLO)

    assert response.message.content == "awake"
    assert len(fake.requests) == 2


async def test_the_total_deadline_bounds_retries(fake_openai: Fake) -> None:
    fake, url = fake_openai
    fake.outage = FakeReply(status=500)
    time = FakeTime()
    timeouts = {"total": 0.2}
    retry = {"backoff_base": 1.0}
    async with router_for(time, openai_model("gpt", url, timeouts=timeouts, retry=retry)) as r:
        with pytest.raises(UpstreamServerError):
            await r.complete("gpt", HELLO)

    assert len(fake.requests) == 1  # the backoff would pass the deadline: no second attempt


async def test_a_slow_first_byte_is_retried_before_the_stream_starts(fake_openai: Fake) -> None:
    fake, url = fake_openai
    fake.queue(FakeReply(text="late", first_byte_delay=0.8), FakeReply(text="prompt"))
    async with router_for(FakeTime(), openai_model("gpt", url, timeouts=FAST)) as router:
        routed = await router.stream("gpt", HELLO)
        events = [routed.first, *[e async for e in routed.rest]]

    assert isinstance(events[-1], StreamDone)
    assert events[-1].response.message.content == "prompt"
    assert len(fake.requests) == 2


async def test_an_error_event_before_any_content_is_retried(fake_openai: Fake) -> None:
    fake, url = fake_openai
    fake.queue(
        FakeReply(text="never", stream_error={"message": "boom", "type": "server_error"}),
        FakeReply(text="fine"),
    )
    async with router_for(FakeTime(), openai_model("gpt", url)) as router:
        routed = await router.stream("gpt", HELLO)
        events = [routed.first, *[e async for e in routed.rest]]

    assert isinstance(events[-1], StreamDone)
    assert events[-1].response.message.content == "fine"
    assert len(fake.requests) == 2


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (FakeReply(text="cut off in the middle", truncate_after=3), UpstreamProtocolError),
        (FakeReply(text="goes quiet after a bit", stall_after=3), UpstreamTimeout),
        (
            FakeReply(
                text="fails after it began",
                stream_error={"message": "boom", "type": "server_error"},
                error_after=3,
            ),
            UpstreamServerError,
        ),
    ],
)
async def test_a_stream_broken_after_its_first_event_raises_and_is_not_retried(
    fake_openai: Fake, reply: FakeReply, error: type[Exception]
) -> None:
    fake, url = fake_openai
    fake.queue(reply)
    async with router_for(FakeTime(), openai_model("gpt", url, timeouts=FAST)) as router:
        routed = await router.stream("gpt", HELLO)
        assert isinstance(routed.first, TextDelta)
        with pytest.raises(error):
            async for _ in routed.rest:
                pass
        upstream = router.balancer.upstreams("gpt")[0]

    assert len(fake.requests) == 1
    assert upstream.in_flight == 0


async def test_a_stream_that_is_only_its_final_event_settles_at_once(fake_openai: Fake) -> None:
    fake, url = fake_openai
    fake.queue(FakeReply(text=""))
    async with router_for(FakeTime(), openai_model("gpt", url)) as router:
        routed = await router.stream("gpt", HELLO)
        rest = [event async for event in routed.rest]
        upstream = router.balancer.upstreams("gpt")[0]

    assert isinstance(routed.first, StreamDone)
    assert rest == []
    assert (upstream.in_flight, upstream.breaker.state) == (0, "closed")


async def test_a_stream_closed_unread_settles_its_deployment(fake_openai: Fake) -> None:
    fake, url = fake_openai
    fake.queue(FakeReply(text="nobody reads this"))
    async with router_for(FakeTime(), openai_model("gpt", url)) as router:
        routed = await router.stream("gpt", HELLO)
        upstream = router.balancer.upstreams("gpt")[0]
        assert upstream.in_flight == 1
        await routed.rest.aclose()

    assert upstream.in_flight == 0
    assert upstream.breaker.allows()


async def test_a_request_we_cannot_encode_is_our_error_not_the_providers() -> None:
    """NaN is not JSON: the request fails in our own process before anything is sent. Ollama's
    adapter maps only its client's and the wire's failures, so this reaches the caller as an
    internal error, and the deployment's circuit (opened here by a single failure) stays shut."""
    fake = FakeOllama()
    unsendable = ChatRequest(HELLO.messages, params=SamplingParams(temperature=math.nan))
    with serve(fake.app()) as url:
        model = {
            "name": "local",
            "provider": "ollama",
            "model": "llama3.2",
            "base_url": url,
            "circuit_breaker": {"failure_threshold": 1},
        }
        async with router_for(FakeTime(), model) as router:
            with pytest.raises(InternalError):
                await router.complete("local", unsendable)
            with pytest.raises(InternalError):
                await router.stream("local", unsendable)
            breaker = router.balancer.upstreams("local")[0].breaker
            assert (breaker.failures, breaker.state) == (0, "closed")
            response, _ = await router.complete("local", HELLO)

    assert response.message.content
    assert len(fake.requests) == 1  # only the sendable request reached Ollama


class _BrokenAdapter:
    """An adapter with a bug of ours: it fails with an exception no provider error maps to."""

    provider = "mock"

    async def complete(self, request: ChatRequest) -> ChatResponse:
        raise KeyError("choices")

    async def stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        yield TextDelta("Hel")
        raise KeyError("choices")

    async def probe(self) -> str | None:
        return None

    async def aclose(self) -> None:
        return None


async def test_a_bug_mid_stream_ends_it_with_an_internal_error_not_held_against_anyone() -> None:
    config = ModelConfig(name="m", provider="mock", circuit_breaker={"failure_threshold": 1})  # type: ignore[arg-type]
    registry = ModelRegistry.build([config], {"mock": lambda c, key: _BrokenAdapter()}, {})
    router = Router(registry, FakeTime().timing())

    with pytest.raises(InternalError):
        await router.complete("m", HELLO)
    routed = await router.stream("m", HELLO)
    assert routed.first == TextDelta("Hel")
    with pytest.raises(InternalError) as caught:
        async for _ in routed.rest:
            pass

    upstream = router.balancer.upstreams("m")[0]
    assert (upstream.breaker.failures, upstream.breaker.state, upstream.in_flight) == (
        0,
        "closed",
        0,
    )
    assert "KeyError" in caught.value.message
