"""Admin decisions on tool calls held for a human."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from chat_service.tool_calls import CallState
from db.base import utcnow
from gateway.auth import AdminPrincipal, ServicesDep
from gateway.metrics import GatewayMetrics
from gateway.responses import json_response
from gateway.services import get_services

router = APIRouter(prefix="/v1/admin/approvals", tags=["admin"])


class Decision(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str | None = Field(None, max_length=2000)


_STATES = {
    "pending": [CallState.AWAITING_APPROVAL],
    "decided": [CallState.APPROVED, CallState.REJECTED, CallState.EXPIRED],
}


@router.get("")
async def list_approvals(
    principal: AdminPrincipal,
    services: ServicesDep,
    status: Literal["pending", "decided"] = Query("pending"),
) -> Response:
    calls = await services.tool_calls.in_states(_STATES[status])
    return json_response({"object": "list", "data": [c.to_json() for c in calls]})


async def _decide(
    request: Request, principal: AdminPrincipal, call_id: str, approve: bool, body: Decision | None
) -> Response:
    services = await get_services(request)
    reason = body.reason if body else None
    call = await services.approvals.decide(call_id, principal.key_id, approve, reason)
    metrics: GatewayMetrics = request.app.state.metrics
    waited = (utcnow() - call.created_at).total_seconds()
    metrics.observe_approval_decision("approved" if approve else "rejected", waited)
    # The turn resumes here, on whichever replica took the decision.
    services.background.resume(call.conversation_id)
    return json_response(call.to_json())


@router.post("/{call_id}/approve")
async def approve(
    call_id: str, request: Request, principal: AdminPrincipal, body: Decision | None = None
) -> Response:
    return await _decide(request, principal, call_id, True, body)


@router.post("/{call_id}/reject")
async def reject(
    call_id: str, request: Request, principal: AdminPrincipal, body: Decision | None = None
) -> Response:
    return await _decide(request, principal, call_id, False, body)
