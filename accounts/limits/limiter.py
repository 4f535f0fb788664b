"""Per-key requests and tokens per minute, and key and team spend per day and month.

A key's limits are its roles' (``key_limits``) tightened by its own (set by an admin); its team's
budgets apply on top (``accounts.limits.budgets``). Fixed windows (the minute, the UTC day or
month) keep the check to one counter read or
increment per limit, which Redis makes atomic across replicas. Tokens and spend are known only
after the answer, so they are charged then and checked before the next request: a key may
overshoot by one request's worth, never more.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from typing import Protocol

import structlog

from accounts.errors import BudgetExceeded, RateLimited
from accounts.limits.budgets import Budget, BudgetAlert, BudgetAlertSink, budgets
from accounts.limits.config import KeyLimits, KeyLimitsConfig
from accounts.limits.counters import Counters, CountersUnavailable
from accounts.pricing import PriceBook
from accounts.principals import Principal
from llm_service.types import Usage

log = structlog.get_logger("accounts.limits")
MINUTE = 60


class CarriesUsage(Protocol):
    """What a streamed answer leaves behind once its body is sent: the usage it reported."""

    @property
    def usage(self) -> Usage | None: ...


class KeyLimiter:
    def __init__(
        self,
        config: KeyLimitsConfig,
        counters: Counters,
        prices: PriceBook,
        clock: Callable[[], float] = time.time,
        on_alert: BudgetAlertSink | None = None,
    ) -> None:
        self._config = config
        self._counters = counters
        self._prices = prices
        self._clock = clock
        self._on_alert = on_alert

    @property
    def counters(self) -> Counters:
        """The shared counters, for other limits that must hold across replicas (sign-in)."""
        return self._counters

    def limits_for(self, principal: Principal) -> KeyLimits:
        """The role limits, tightened by the key's own."""
        return self._config.for_roles(principal.roles).tightened_by(principal.limits)

    async def admit(self, principal: Principal) -> None:
        """Raises ``RateLimited`` (429 with ``Retry-After``) when the key is over a limit."""
        limits = self.limits_for(principal)
        if _unlimited(principal, limits):
            return
        try:
            await self._check(principal, limits)
        except CountersUnavailable as exc:
            # Refusing every caller because the limit store is down would turn a Redis outage
            # into a gateway outage; the limits are protection, not billing.
            log.warning("limits_unavailable", reason=str(exc))

    async def charge(self, principal: Principal, alias: str, usage: Usage | None) -> None:
        limits = self.limits_for(principal)
        if usage is None or _unlimited(principal, limits):
            return
        now = self._clock()
        try:
            if limits.tokens_per_minute is not None:
                key = _window_key("tpm", principal.key_id, now, MINUTE)
                await self._counters.add(key, usage.total_tokens, MINUTE * 2)
            # An unpriced model adds nothing here; it is flagged in /readyz instead.
            spent = self._prices.cost(alias, usage) or 0.0
            if spent > 0:
                await self._spend(budgets(principal, limits, now), spent)
        except CountersUnavailable as exc:
            log.warning("limits_unavailable", reason=str(exc))

    async def _spend(self, applicable: list[Budget], spent: float) -> None:
        for budget in applicable:
            after = await self._counters.add(budget.counter, spent, budget.ttl_seconds)
            for threshold in budget.crossed(after - spent, after):
                alert = BudgetAlert(
                    budget.scope,
                    budget.subject,
                    budget.period,
                    budget.window,
                    threshold,
                    budget.limit,
                    after,
                )
                log.warning("budget_threshold_crossed", **_alert_fields(alert))
                if self._on_alert is not None:
                    await self._on_alert(alert)

    def charge_after(
        self, body: AsyncIterator[bytes], principal: Principal, alias: str, context: CarriesUsage
    ) -> AsyncIterator[bytes]:
        """The streamed body, which charges the usage its end recorded; as it is without limits."""
        if _unlimited(principal, self.limits_for(principal)):
            return body  # no extra step for every chunk when nothing is counted
        return self._charged_after(body, principal, alias, context)

    async def _charged_after(
        self, body: AsyncIterator[bytes], principal: Principal, alias: str, context: CarriesUsage
    ) -> AsyncIterator[bytes]:
        async for chunk in body:
            yield chunk
        await self.charge(principal, alias, context.usage)

    async def _check(self, principal: Principal, limits: KeyLimits) -> None:
        now = self._clock()
        key_id = principal.key_id
        for budget in budgets(principal, limits, now):
            if await self._counters.get(budget.counter) >= budget.limit:
                raise BudgetExceeded(budget.refusal, budget.retry_after)
        if limits.tokens_per_minute is not None:
            tokens = await self._counters.get(_window_key("tpm", key_id, now, MINUTE))
            if tokens >= limits.tokens_per_minute:
                raise RateLimited(
                    f"This API key is over its {limits.tokens_per_minute} tokens per minute.",
                    _until_next(now, MINUTE),
                )
        if limits.requests_per_minute is not None:
            key = _window_key("rpm", key_id, now, MINUTE)
            if await self._counters.add(key, 1, MINUTE * 2) > limits.requests_per_minute:
                raise RateLimited(
                    f"This API key is over its {limits.requests_per_minute} requests per minute.",
                    _until_next(now, MINUTE),
                )

    async def aclose(self) -> None:
        await self._counters.aclose()


def _unlimited(principal: Principal, limits: KeyLimits) -> bool:
    team = principal.team_budget
    return limits.unlimited and (team is None or principal.team is None)


def _alert_fields(alert: BudgetAlert) -> dict[str, object]:
    return {name: getattr(alert, name) for name in BudgetAlert.__slots__}


def _window_key(kind: str, key_id: int, now: float, window: int) -> str:
    return f"{kind}:{key_id}:{int(now // window)}"


def _until_next(now: float, window: int) -> float:
    return window - (now % window)
