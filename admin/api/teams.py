"""Teams and their shared spend budgets."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path
from starlette.responses import Response

from accounts.limits.config import TeamBudget
from accounts.teams import TeamInfo
from gateway.auth import AdminPrincipal, ServicesDep
from gateway.responses import json_response

router = APIRouter(prefix="/v1/admin/teams", tags=["admin"])
TEAM_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9 ._-]{0,99}$"
TeamName = Annotated[str, Path(pattern=TEAM_PATTERN)]


def team_json(info: TeamInfo) -> dict[str, Any]:
    return {
        "object": "team",
        "name": info.name,
        "budget_per_day": info.budget.budget_per_day,
        "budget_per_month": info.budget.budget_per_month,
        "keys": info.keys,
        "updated_at": info.updated_at.isoformat() if info.updated_at else None,
    }


@router.get("")
async def list_teams(principal: AdminPrincipal, services: ServicesDep) -> Response:
    teams = await services.teams.list()
    return json_response({"object": "list", "data": [team_json(t) for t in teams]})


@router.put("/{name}")
async def put_team(
    name: TeamName, body: TeamBudget, principal: AdminPrincipal, services: ServicesDep
) -> Response:
    info = await services.teams.put(name, body, principal.key_id)
    services.keys.forget()  # this replica's keys carry their team's budgets
    return json_response(team_json(info))
