"""Load balancing over deployments, and circuit breaking through a provider outage."""

from __future__ import annotations

from collections import Counter

import pytest

from llm_service.errors import GatewayError, ModelUnavailable
from tests.llm_service.routing_support import HELLO, FakeTime, openai_model, router_for
from tests.support.fake_openai import FakeOpenAI, FakeReply
from tests.support.servers import serve

BREAKER = {"failure_threshold": 3, "cooldown_seconds": 30}
DOWN = FakeReply(status=503, error={"message": "down", "type": "server_error"})


async def test_weighted_choice_when_idle_and_least_in_flight_when_busy() -> None:
    model = {
        "name": "pool",
        "provider": "mock",
        "deployments": [{"id": "big", "weight": 3}, {"id": "small", "weight": 1}],
    }
    async with router_for(FakeTime(), model) as router:
        picks = Counter(router.balancer.pick("pool").deployment.id for _ in range(400))
        big = router.balancer.upstreams("pool")[0]
        big.in_flight = 3  # load 1.0 against small's 0: small is the lighter one
        busy_pick = router.balancer.pick("pool").deployment.id

    assert 0.65 < picks["big"] / 400 < 0.85
    assert busy_pick == "small"


async def test_outage_costs_at_most_1_2_upstream_calls_per_request_and_recovers(
    fake_openai: tuple[FakeOpenAI, str],
) -> None:
    fake, url = fake_openai
    time = FakeTime()
    primary = openai_model("primary", url, fallbacks=["backup"], circuit_breaker=BREAKER)
    backup = {"name": "backup", "provider": "mock"}
    fake.outage = DOWN
    requests = 100
    async with router_for(time, primary, backup) as router:
        for _ in range(requests):
            _, served = await router.complete("primary", HELLO)
            assert served.alias == "backup"
            time.now += 1  # one request a second: several cooldowns pass during the outage
        calls_while_down = len(fake.requests)

        fake.outage = None
        time.now += 31
        answers = [await router.complete("primary", HELLO) for _ in range(5)]

    assert calls_while_down / requests <= 1.2
    assert [served.alias for _, served in answers] == ["primary"] * 5
    assert len(fake.requests) == calls_while_down + 5


async def test_without_a_fallback_an_open_circuit_answers_503_without_calling(
    fake_openai: tuple[FakeOpenAI, str],
) -> None:
    fake, url = fake_openai
    fake.outage = DOWN
    async with router_for(FakeTime(), openai_model("gpt", url, circuit_breaker=BREAKER)) as r:
        with pytest.raises(GatewayError):
            await r.complete("gpt", HELLO)
        calls = len(fake.requests)
        with pytest.raises(ModelUnavailable):
            await r.complete("gpt", HELLO)

    assert calls == 3
    assert len(fake.requests) == calls


async def test_a_failing_deployment_leaves_rotation_and_a_probe_brings_it_back() -> None:
    down, up = FakeOpenAI(), FakeOpenAI()
    down.outage = DOWN
    time = FakeTime()
    with serve(down.app()) as down_url, serve(up.app()) as up_url:
        model = {
            "name": "pool",
            "provider": "openai",
            "circuit_breaker": BREAKER,
            "deployments": [
                {"id": "east", "base_url": f"{down_url}/v1"},
                {"id": "west", "base_url": f"{up_url}/v1"},
            ],
        }
        async with router_for(time, model) as router:
            served = [(await router.complete("pool", HELLO))[1].deployment for _ in range(40)]
            east = router.balancer.upstreams("pool")[0]
            assert east.breaker.state == "open"
            calls_while_down = len(down.requests)
            down.outage = None
            time.now += 31
            after = [(await router.complete("pool", HELLO))[1].deployment for _ in range(40)]

    assert set(served) == {"west"}  # every request answered, retried onto the healthy one
    assert calls_while_down == 3
    assert "east" in after
    assert east.breaker.state == "closed"
