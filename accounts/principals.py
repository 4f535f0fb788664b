"""Who is calling: what a request's API key makes of it, read by every layer above."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from accounts.limits.config import KeyLimits, TeamBudget


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: the key's identity and roles, and its settings an admin may change."""

    key_id: int
    name: str
    roles: frozenset[str]
    owner: str = ""  # the person or service the key belongs to
    team: str | None = None
    allowed_models: frozenset[str] | None = None  # None: whatever its roles allow
    limits: KeyLimits | None = None  # the key's own, applied on top of its roles'
    team_budget: TeamBudget | None = None
    expires_at: datetime | None = None

    @property
    def is_admin(self) -> bool:
        return "admin" in self.roles

    def may_use(self, alias: str) -> bool:
        return self.allowed_models is None or alias in self.allowed_models

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now
