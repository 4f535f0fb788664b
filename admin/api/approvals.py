"""Admin decisions on tool calls held for a human, named by their ``record_id``.

The decision itself (audit, metric, resuming the turn) is ``Approvals.decide``, shared with the
admin UI's queue."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from accounts.principals import Principal
from chat_service.tool_call_view import CallState
from gateway.auth import AdminPrincipal, ServicesDep
from gateway.responses import json_response
from gateway.services import Services

router = APIRouter(prefix="/v1/admin/approvals", tags=["admin"])


class Decision(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str | None = Field(None, max_length=2000)


@router.get("")
async def list_approvals(
    principal: AdminPrincipal,
    services: ServicesDep,
    status: Literal["pending", "decided"] = Query("pending"),
) -> Response:
    """``pending``: the calls awaiting a decision, oldest first; ``decided``: the calls that
    got one (approved, rejected, expired, denied at approval), whatever state they moved on to
    (an approved call that ran, with its result), newest decision first."""
    tool_calls = services.tool_calls
    calls = (
        await tool_calls.in_states([CallState.AWAITING_APPROVAL])
        if status == "pending"
        else await tool_calls.decided(limit=500)
    )
    return json_response({"object": "list", "data": [c.to_json() for c in calls]})


async def _decide(
    services: Services, principal: Principal, record_id: str, approve: bool, body: Decision | None
) -> Response:
    reason = body.reason if body else None
    call = await services.approvals.decide(record_id, principal.key_id, approve, reason)
    return json_response(call.to_json())


@router.post("/{record_id}/approve")
async def approve(
    record_id: str, principal: AdminPrincipal, services: ServicesDep, body: Decision | None = None
) -> Response:
    return await _decide(services, principal, record_id, True, body)


@router.post("/{record_id}/reject")
async def reject(
    record_id: str, principal: AdminPrincipal, services: ServicesDep, body: Decision | None = None
) -> Response:
    return await _decide(services, principal, record_id, False, body)
