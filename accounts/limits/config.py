"""What operators write under ``key_limits:``: per-role request, token and spend limits."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field


class KeyLimits(BaseModel):
    """Limits for one API key; ``null`` means unlimited."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    requests_per_minute: int | None = Field(None, gt=0)
    tokens_per_minute: int | None = Field(None, gt=0)
    budget_per_day: float | None = Field(None, gt=0, description="USD per UTC day")
    budget_per_month: float | None = Field(None, gt=0, description="USD per UTC calendar month")

    def tightened_by(self, other: KeyLimits | None) -> KeyLimits:
        """Both apply: per field, the stricter of the two (a key's own limits on its roles')."""
        if other is None:
            return self
        return KeyLimits(
            requests_per_minute=_strictest(self.requests_per_minute, other.requests_per_minute),
            tokens_per_minute=_strictest(self.tokens_per_minute, other.tokens_per_minute),
            budget_per_day=_strictest(self.budget_per_day, other.budget_per_day),
            budget_per_month=_strictest(self.budget_per_month, other.budget_per_month),
        )

    @property
    def unlimited(self) -> bool:
        # Plain attribute reads: this runs on every request.
        return (
            self.requests_per_minute is None
            and self.tokens_per_minute is None
            and self.budget_per_day is None
            and self.budget_per_month is None
        )


class TeamBudget(BaseModel):
    """A team's spend budgets, shared by its keys; ``null`` means unlimited."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    budget_per_day: float | None = Field(None, gt=0, description="USD per UTC day")
    budget_per_month: float | None = Field(None, gt=0, description="USD per UTC calendar month")


class KeyLimitsConfig(BaseModel):
    """Limits follow a key's roles: the most generous of its roles' entries, else ``default``."""

    model_config = ConfigDict(extra="forbid")

    default: KeyLimits = Field(default_factory=KeyLimits)
    roles: dict[str, KeyLimits] = Field(default_factory=dict)
    reserve_max_tokens: int = Field(
        4096,
        gt=0,
        description="output tokens a budget reserves for a request that sets no max_tokens",
    )

    def for_roles(self, roles: Iterable[str]) -> KeyLimits:
        matching = [self.roles[role] for role in sorted(roles) if role in self.roles]
        if not matching:
            return self.default
        return KeyLimits(
            requests_per_minute=_most_generous(m.requests_per_minute for m in matching),
            tokens_per_minute=_most_generous(m.tokens_per_minute for m in matching),
            budget_per_day=_most_generous(m.budget_per_day for m in matching),
            budget_per_month=_most_generous(m.budget_per_month for m in matching),
        )


N = TypeVar("N", int, float)


def _most_generous(values: Iterable[N | None]) -> N | None:
    collected = list(values)
    if any(v is None for v in collected):
        return None
    return max(v for v in collected if v is not None)


def _strictest(first: N | None, second: N | None) -> N | None:
    if first is None:
        return second
    if second is None:
        return first
    return min(first, second)
