"""Rate limits through running gateways: one process in memory, two sharing Redis."""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import redis

from tests.support.databases import IN_CI
from tests.support.gateway import RunningGateway, running_gateway

REDIS_URL = "redis://127.0.0.1:6379/0"
MODELS = [{"name": "mock", "provider": "mock"}]
LIMITS = {"roles": {"user": {"requests_per_minute": 3}}}


def _redis_or_skip() -> None:
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
    except redis.RedisError:
        if IN_CI:
            raise
        pytest.skip("Redis is not running on 127.0.0.1:6379")


def _call(gateway: RunningGateway, key: str) -> httpx.Response:
    return httpx.post(
        f"{gateway.v1}/chat/completions",
        json={"model": "mock", "messages": [{"role": "user", "content": "hi"}]},
        headers={"authorization": f"Bearer {key}"},
    )


def _minute() -> int:
    return int(time.time() // 60)


def _admitted_before_429(send: Callable[[int], httpx.Response]) -> tuple[int, httpx.Response]:
    """Calls until refused; returns how many calls were admitted in the refusal's minute and the
    refusal. The limiter counts whole UTC minutes, so calls are counted per minute: a minute that
    turns between calls starts a fresh count, as it does in the limiter."""
    admitted: Counter[int] = Counter()
    for number in range(30):
        before = _minute()
        response = send(number)
        minute = _minute()
        if before != minute:
            # The minute turned during this call: which one counted it is unknown. Start over in
            # the next minute (this happens about once in thousands of runs).
            threading.Event().wait(60 - time.time() % 60)
            admitted.clear()
            continue
        if response.status_code == 429:
            return admitted[minute], response
        assert response.status_code == 200, response.text
        admitted[minute] += 1
    raise AssertionError("never rate limited")


@pytest.fixture
def database(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}"


def test_one_process_limits_in_memory(database: str) -> None:
    with running_gateway(database, models=MODELS, key_limits=LIMITS) as gateway:
        key = gateway.create_key("team", ["user"])
        admitted, refused = _admitted_before_429(lambda _: _call(gateway, key))

    assert admitted == 3
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    assert refused.json()["error"]["code"] == "rate_limit_exceeded"


@pytest.fixture
def two_gateways(database: str) -> Iterator[tuple[RunningGateway, RunningGateway]]:
    _redis_or_skip()
    shared = {
        "models": MODELS,
        "key_limits": LIMITS,
        "redis_url": REDIS_URL,
        "redis_key_prefix": f"test-{uuid.uuid4().hex}:",
    }
    with running_gateway(database, **shared) as one, running_gateway(database, **shared) as two:
        yield one, two


def test_two_gateways_share_the_limit_through_redis(
    two_gateways: tuple[RunningGateway, RunningGateway],
) -> None:
    one, two = two_gateways
    key = one.create_key("team", ["user"])
    other_key = one.create_key("other-team", ["user"])

    admitted, refused = _admitted_before_429(lambda n: _call((one, two)[n % 2], key))

    assert admitted == 3
    assert "retry-after" in refused.headers
    assert _call(two, other_key).status_code == 200  # limits are per key


def test_the_anthropic_api_counts_against_the_same_limit(database: str) -> None:
    with running_gateway(database, models=MODELS, key_limits=LIMITS) as gateway:
        key = gateway.create_key("anthropic-sdk-user", ["user"])

        def send(number: int) -> httpx.Response:
            if number % 2:
                return _call(gateway, key)
            return httpx.post(
                f"{gateway.v1}/messages",
                json={
                    "model": "mock",
                    "max_tokens": 16,
                    "messages": [{"role": "user", "content": "hi"}],
                },
                headers={"x-api-key": key},
            )

        admitted, refused = _admitted_before_429(send)

    assert admitted == 3
    assert int(refused.headers["retry-after"]) >= 1
