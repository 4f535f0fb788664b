"""Spend budgets: a key's and its team's, per UTC day and calendar month, and their alerts.

Each budget is one counter (Redis when configured, so every replica adds to the same one). Its
window is in the counter's name, so a new day or month starts a new counter. An alert fires when
an increment carries the counter across 80 % or 100 % of the budget: counters are incremented
atomically, so exactly one increment, on one replica, crosses each threshold.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from accounts.limits.config import KeyLimits
from accounts.principals import Principal

DAY = 86_400
ALERT_THRESHOLDS = (0.8, 1.0)
Scope = Literal["key", "team"]
Period = Literal["day", "month"]


@dataclass(frozen=True, slots=True)
class BudgetAlert:
    """A budget's spend crossed ``threshold`` (a fraction of ``budget``) in this period."""

    scope: Scope
    subject: str  # the key's id, or the team's name
    period: Period
    window: str  # the day (YYYY-MM-DD) or month (YYYY-MM)
    threshold: float
    budget: float
    spent: float


# Where alerts go: an audit event today; a notification channel (webhooks) can be another sink.
BudgetAlertSink = Callable[[BudgetAlert], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Budget:
    scope: Scope
    subject: str
    period: Period
    limit: float
    counter: str
    window: str
    ttl_seconds: int
    retry_after: float

    @property
    def refusal(self) -> str:
        whose = "This API key" if self.scope == "key" else f"Team `{self.subject}`"
        per = "daily" if self.period == "day" else "monthly"
        return f"{whose} has spent its {per} budget of {self.limit:g} USD."

    def crossed(self, before: float, after: float) -> Iterator[float]:
        for threshold in ALERT_THRESHOLDS:
            if before < threshold * self.limit <= after:
                yield threshold


def budgets(principal: Principal, limits: KeyLimits, now: float) -> list[Budget]:
    """The spend budgets that apply to this key's requests at ``now`` (epoch seconds)."""
    moment = datetime.fromtimestamp(now, UTC)
    day, month = moment.strftime("%Y-%m-%d"), moment.strftime("%Y-%m")
    until_tomorrow = DAY - now % DAY
    until_next_month = _next_month(moment).timestamp() - now
    found: list[Budget] = []
    key = str(principal.key_id)
    if limits.budget_per_day is not None:
        counter = f"spend:{key}:{int(now // DAY)}"
        found.append(
            Budget("key", key, "day", limits.budget_per_day, counter, day, 2 * DAY, until_tomorrow)
        )
    if limits.budget_per_month is not None:
        counter = f"spend-month:{key}:{month}"
        found.append(
            Budget("key", key, "month", limits.budget_per_month, counter, month, 32 * DAY,
                   until_next_month)
        )  # fmt: skip
    team = principal.team_budget
    if principal.team is not None and team is not None:
        name = principal.team
        if team.budget_per_day is not None:
            counter = f"team-spend:{name}:{int(now // DAY)}"
            found.append(
                Budget("team", name, "day", team.budget_per_day, counter, day, 2 * DAY,
                       until_tomorrow)
            )  # fmt: skip
        if team.budget_per_month is not None:
            counter = f"team-spend-month:{name}:{month}"
            found.append(
                Budget("team", name, "month", team.budget_per_month, counter, month, 32 * DAY,
                       until_next_month)
            )  # fmt: skip
    return found


def _next_month(moment: datetime) -> datetime:
    if moment.month == 12:
        return datetime(moment.year + 1, 1, 1, tzinfo=UTC)
    return datetime(moment.year, moment.month + 1, 1, tzinfo=UTC)
