"""Teams and their spend budgets; a key names its team (``api_keys.team``).

A budget change reaches the limiter with the keys' cached lookups: at once on this replica
(``KeyStore.forget``), within ``auth_cache_seconds`` on the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from accounts.limits.config import TeamBudget
from db.base import utcnow
from db.models import ApiKey, AuditEvent, Team


@dataclass(frozen=True, slots=True)
class TeamInfo:
    name: str
    budget: TeamBudget
    keys: int  # active keys in the team
    updated_at: datetime | None


class TeamStore:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def list(self) -> list[TeamInfo]:
        """Teams with budgets, and teams that keys name without one."""
        async with self._sessions() as session:
            stored = {team.name: team for team in await session.scalars(select(Team))}
            rows = await session.execute(
                select(ApiKey.team, func.count(ApiKey.id))
                .where(ApiKey.team.is_not(None), ApiKey.revoked_at.is_(None))
                .group_by(ApiKey.team)
            )
            counts = {name: int(count) for name, count in rows.all()}
        names = sorted(set(stored) | {name for name in counts if name is not None})
        return [_info(name, stored.get(name), counts.get(name, 0)) for name in names]

    async def put(self, name: str, budget: TeamBudget, actor_key_id: int | None) -> TeamInfo:
        """Sets a team's budgets (audited as ``team.saved`` with before and after)."""
        async with self._sessions.begin() as session:
            row = await session.get(Team, name)
            before = _budget(row).model_dump() if row is not None else None
            if row is None:
                row = Team(name=name)
                session.add(row)
            row.budget_per_day = budget.budget_per_day
            row.budget_per_month = budget.budget_per_month
            row.updated_at = utcnow()
            row.updated_by_key_id = actor_key_id
            detail = {"team": name, "before": before, "after": budget.model_dump()}
            session.add(AuditEvent(actor_key_id=actor_key_id, action="team.saved", detail=detail))
            keys = await session.scalar(
                select(func.count(ApiKey.id)).where(
                    ApiKey.team == name, ApiKey.revoked_at.is_(None)
                )
            )
        return TeamInfo(name, budget, int(keys or 0), row.updated_at)


def _budget(row: Team | None) -> TeamBudget:
    if row is None:
        return TeamBudget()
    return TeamBudget(budget_per_day=row.budget_per_day, budget_per_month=row.budget_per_month)


def _info(name: str, row: Team | None, keys: int) -> TeamInfo:
    return TeamInfo(name, _budget(row), keys, row.updated_at if row is not None else None)
