"""Per-key limits with a controlled clock: requests, tokens and spend per window."""

from __future__ import annotations

import pytest

from accounts.errors import BudgetExceeded, RateLimited
from accounts.limits.config import KeyLimits, KeyLimitsConfig
from accounts.limits.counters import MemoryCounters
from accounts.limits.limiter import KeyLimiter
from accounts.pricing import PriceBook, from_config
from accounts.principals import Principal
from llm_service.config import Price
from llm_service.types import Usage


class Clock:
    def __init__(self) -> None:
        self.now = 86_400.0 * 19_676  # a UTC midnight, so also a whole minute

    def __call__(self) -> float:
        return self.now


ALICE = Principal(1, "alice", frozenset({"user"}))
PRICE = Price(input_per_1k=1.0, output_per_1k=2.0)


def limiter(limits: KeyLimits, clock: Clock) -> KeyLimiter:
    config = KeyLimitsConfig(roles={"user": limits})
    prices = PriceBook({"gpt": from_config(PRICE), "unpriced": None})
    return KeyLimiter(config, MemoryCounters(clock), prices, clock=clock)


async def test_requests_per_minute_then_the_next_window() -> None:
    clock = Clock()
    limits = limiter(KeyLimits(requests_per_minute=2), clock)
    await limits.admit(ALICE)
    await limits.admit(ALICE)
    clock.now += 20

    with pytest.raises(RateLimited) as caught:
        await limits.admit(ALICE)

    assert caught.value.retry_after == pytest.approx(40)
    clock.now += 40
    await limits.admit(ALICE)


async def test_tokens_per_minute_are_charged_after_the_answer() -> None:
    clock = Clock()
    limits = limiter(KeyLimits(tokens_per_minute=100), clock)
    held = await limits.reserve(ALICE, "gpt")
    await limits.settle(held, Usage(prompt_tokens=60, completion_tokens=40))

    with pytest.raises(RateLimited):
        await limits.admit(ALICE)


async def test_the_daily_budget_is_priced_per_model() -> None:
    clock = Clock()
    limits = limiter(KeyLimits(budget_per_day=0.5), clock)
    await limits.settle(await limits.reserve(ALICE, "unpriced"), Usage(10_000, 10_000))
    held = await limits.reserve(ALICE, "gpt", max_tokens=1)
    await limits.settle(held, Usage(prompt_tokens=100, completion_tokens=200))

    with pytest.raises(BudgetExceeded) as caught:
        await limits.admit(ALICE)

    assert caught.value.retry_after is not None
    clock.now += 86_400
    await limits.admit(ALICE)


async def test_reservations_in_flight_count_against_the_budget() -> None:
    # Worst case: 100 output tokens at 0.002 + 50 prompt tokens at 0.001 = 0.25 USD.
    clock = Clock()
    limits = limiter(KeyLimits(budget_per_day=0.5), clock)
    first = await limits.reserve(ALICE, "gpt", max_tokens=100, prompt_tokens=50)
    second = await limits.reserve(ALICE, "gpt", max_tokens=100, prompt_tokens=50)

    with pytest.raises(BudgetExceeded):
        await limits.reserve(ALICE, "gpt", max_tokens=100, prompt_tokens=50)

    await limits.settle(first, None)  # never answered: released
    await limits.settle(second, Usage(prompt_tokens=50, completion_tokens=25))  # 0.1 USD
    third = await limits.reserve(ALICE, "gpt", max_tokens=100, prompt_tokens=50)
    assert third.held == pytest.approx(0.25)
    await limits.settle(third, Usage(prompt_tokens=50, completion_tokens=25))
    await limits.settle(third, Usage(prompt_tokens=50, completion_tokens=25))  # once only
    await limits.admit(ALICE)  # 0.2 spent of 0.5
    assert await limits.counters.get(f"spend:1:{int(clock.now // 86_400)}") == pytest.approx(0.2)


async def test_a_request_without_max_tokens_reserves_the_configured_default() -> None:
    config = KeyLimitsConfig(roles={"user": KeyLimits(budget_per_day=1)}, reserve_max_tokens=10)
    prices = PriceBook({"gpt": from_config(PRICE)})
    limits = KeyLimiter(config, MemoryCounters(Clock()), prices, clock=Clock())

    held = await limits.reserve(ALICE, "gpt")

    assert held.held == pytest.approx(10 * 0.002)


async def test_a_key_without_limits_reserves_nothing() -> None:
    limits = KeyLimiter(KeyLimitsConfig(), MemoryCounters(), PriceBook({}))

    held = await limits.reserve(ALICE, "gpt", max_tokens=100)

    assert held.principal is None
    assert held.budgets == []
    await limits.settle(held, Usage(1, 1))


def test_cost_per_thousand_tokens() -> None:
    prices = PriceBook({"gpt": from_config(PRICE), "unpriced": None})
    assert prices.cost("gpt", Usage(500, 250)) == pytest.approx(1.0)
    assert prices.cost("unpriced", Usage(500, 250)) is None


def test_a_key_gets_the_most_generous_of_its_roles() -> None:
    config = KeyLimitsConfig(
        default=KeyLimits(requests_per_minute=1),
        roles={
            "user": KeyLimits(requests_per_minute=10, tokens_per_minute=100),
            "batch": KeyLimits(requests_per_minute=5),
        },
    )

    both = config.for_roles({"user", "batch"})
    assert (both.requests_per_minute, both.tokens_per_minute) == (10, None)
    assert config.for_roles({"guest"}).requests_per_minute == 1
