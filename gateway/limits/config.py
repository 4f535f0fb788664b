"""What operators write under ``key_limits:``: per-role request, token and spend limits."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field


class KeyLimits(BaseModel):
    """Limits for one API key; ``null`` means unlimited."""

    model_config = ConfigDict(extra="forbid")

    requests_per_minute: int | None = Field(None, gt=0)
    tokens_per_minute: int | None = Field(None, gt=0)
    budget_per_day: float | None = Field(
        None, gt=0, description="spend per UTC day, priced with each model's `price`"
    )


class KeyLimitsConfig(BaseModel):
    """Limits follow a key's roles: the most generous of its roles' entries, else ``default``."""

    model_config = ConfigDict(extra="forbid")

    default: KeyLimits = Field(default_factory=KeyLimits)
    roles: dict[str, KeyLimits] = Field(default_factory=dict)

    def for_roles(self, roles: Iterable[str]) -> KeyLimits:
        matching = [self.roles[role] for role in sorted(roles) if role in self.roles]
        if not matching:
            return self.default
        return KeyLimits(
            requests_per_minute=_most_generous(m.requests_per_minute for m in matching),
            tokens_per_minute=_most_generous(m.tokens_per_minute for m in matching),
            budget_per_day=_most_generous(m.budget_per_day for m in matching),
        )


N = TypeVar("N", int, float)


def _most_generous(values: Iterable[N | None]) -> N | None:
    collected = list(values)
    if any(v is None for v in collected):
        return None
    return max(v for v in collected if v is not None)
