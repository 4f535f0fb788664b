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
from accounts.limits.reservations import Reservation, worst_case_cost
from accounts.pricing import PriceBook
from accounts.principals import Principal
from llm_service.types import Usage

log = structlog.get_logger("accounts.limits")
MINUTE = 60


class CarriesUsage(Protocol):
    """What a streamed answer leaves behind once its body is sent: the usage it reported."""

    @property
    def usage(self) -> Usage | None: ...


# The reservation of a key nothing is counted for: settling it is a no-op.
UNCOUNTED = Reservation(None)


class KeyLimiter:
    def __init__(
        self,
        config: KeyLimitsConfig,
        counters: Counters,
        prices: PriceBook,
        *,
        clock: Callable[[], float] = time.time,
        on_alert: BudgetAlertSink | None = None,
        spend: Counters | None = None,
    ) -> None:
        self._config = config
        self._counters = counters
        # Budgets' counters: the rate counters' unless given (the database's, without Redis).
        self._spend_counters = spend or counters
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
            await self._check(principal, limits, self._clock())
            await self._check_budgets(principal, limits, self._clock())
        except CountersUnavailable as exc:
            # Refusing every caller because the limit store is down would turn a Redis outage
            # into a gateway outage; the limits are protection, not billing.
            log.warning("limits_unavailable", reason=str(exc))

    async def reserve(
        self,
        principal: Principal,
        alias: str,
        *,
        max_tokens: int | None = None,
        prompt_tokens: int = 0,
    ) -> Reservation:
        """``admit``, and the request's worst-case cost held on each of its budgets.

        Raises ``BudgetExceeded`` (nothing held) when a budget is already used up, reservations
        in flight included. Every reservation must be settled (``settle``), also when the request
        fails.
        """
        limits = self.limits_for(principal)
        if _unlimited(principal, limits):
            return UNCOUNTED  # no round trip for a key without limits
        now = self._clock()
        applicable = budgets(principal, limits, now)
        tokens = max_tokens if max_tokens is not None else self._config.reserve_max_tokens
        held = worst_case_cost(self._prices.price(alias), tokens, prompt_tokens)
        reservation = Reservation(
            principal, alias, held, [], counts_tokens=limits.tokens_per_minute is not None
        )
        try:
            await self._check(principal, limits, now)
            await self._hold(reservation, applicable)
        except CountersUnavailable as exc:
            log.warning("limits_unavailable", reason=str(exc))
        return reservation

    async def _hold(self, reservation: Reservation, applicable: list[Budget]) -> None:
        held = reservation.held
        for budget in applicable:
            # The hold is the check, atomic: each request sees every earlier hold, and a refused
            # one adds nothing (an add-then-undo would briefly count it against the others).
            after = await self._spend_counters.hold(
                budget.counter, held, budget.limit, budget.ttl_seconds
            )
            if after is None:
                await self._release(reservation)  # the budgets held before this one
                raise BudgetExceeded(budget.refusal, budget.retry_after)
            reservation.budgets.append(budget)

    async def _release(self, reservation: Reservation) -> None:
        reservation.settled = True
        for budget in reservation.budgets:
            if reservation.held:
                await self._spend_counters.add(
                    budget.counter, -reservation.held, budget.ttl_seconds
                )

    async def settle(
        self, reservation: Reservation, usage: Usage | None, alias: str | None = None
    ) -> None:
        """Replaces the hold by the real cost of ``usage`` on the model that answered (``alias``,
        after any fallback; default: the one reserved for); None (the request never reached the
        provider, was refused, or its cost is unknown) releases it. Once per reservation."""
        principal = reservation.principal
        if principal is None or reservation.settled:
            return
        reservation.settled = True
        try:
            if usage is not None and reservation.counts_tokens:
                key = _window_key("tpm", principal.key_id, self._clock(), MINUTE)
                await self._counters.add(key, usage.total_tokens, MINUTE * 2)
            spent = 0.0
            if usage is not None:
                # An unpriced model adds nothing here; it is flagged in /readyz instead.
                spent = self._prices.cost(alias or reservation.alias, usage) or 0.0
            await self._spend(reservation.budgets, spent, spent - reservation.held)
        except CountersUnavailable as exc:
            log.warning("limits_unavailable", reason=str(exc))

    def settle_after(
        self,
        body: AsyncIterator[bytes],
        reservation: Reservation,
        alias: str,
        context: CarriesUsage,
    ) -> AsyncIterator[bytes]:
        """The streamed body, which settles the reservation with the usage its end recorded; a
        stream that ended without usage (cut, failed, or left by the client) reached the
        provider, so it is settled at no tokens (its ``per_request`` price), as its usage row is
        priced. As it is without limits."""
        if reservation.principal is None:
            return body  # no extra step for every chunk when nothing is counted
        return self._settled_after(body, reservation, alias, context)

    async def _settled_after(
        self,
        body: AsyncIterator[bytes],
        reservation: Reservation,
        alias: str,
        context: CarriesUsage,
    ) -> AsyncIterator[bytes]:
        try:
            async for chunk in body:
                yield chunk
        finally:
            await self.settle(reservation, context.usage or Usage(), alias)

    async def _spend(self, applicable: list[Budget], spent: float, added: float) -> None:
        """Adds ``added`` to each budget's counter; ``spent`` of it is real spend, which alerts
        when it carries the counter across a threshold."""
        for budget in applicable:
            if not added:
                continue
            after = await self._spend_counters.add(budget.counter, added, budget.ttl_seconds)
            if spent <= 0:
                continue
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

    async def _check_budgets(self, principal: Principal, limits: KeyLimits, now: float) -> None:
        for budget in budgets(principal, limits, now):
            if await self._spend_counters.get(budget.counter) >= budget.limit:
                raise BudgetExceeded(budget.refusal, budget.retry_after)

    async def _check(self, principal: Principal, limits: KeyLimits, now: float) -> None:
        """Requests and tokens per minute."""
        key_id = principal.key_id
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
        if self._spend_counters is not self._counters:
            await self._spend_counters.aclose()


def _unlimited(principal: Principal, limits: KeyLimits) -> bool:
    team = principal.team_budget
    return limits.unlimited and (team is None or principal.team is None)


def _alert_fields(alert: BudgetAlert) -> dict[str, object]:
    return {name: getattr(alert, name) for name in BudgetAlert.__slots__}


def _window_key(kind: str, key_id: int, now: float, window: int) -> str:
    return f"{kind}:{key_id}:{int(now // window)}"


def _until_next(now: float, window: int) -> float:
    return window - (now % window)
