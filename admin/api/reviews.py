"""Tool definitions held for review (pinning against rug pulls): list, approve, reject."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Query
from starlette.responses import Response

from admin import RowId
from gateway.auth import AdminPrincipal, ServicesDep
from gateway.responses import json_response
from gateway.services import Services
from governance import PinStatus, PinView
from governance.errors import ReviewConflict

router = APIRouter(prefix="/v1/admin/tool-reviews", tags=["admin"])


async def review_json(services: Services, pin: PinView) -> dict[str, Any]:
    previous = await services.tools.previous_review(pin)
    return {**pin.to_json(), "previous": previous.to_json() if previous else None}


async def decide_review(services: Services, pin_id: int, approve: bool, key_id: int) -> PinView:
    pin = await services.tools.decide_review(pin_id, approve, key_id)
    if pin is None:
        raise ReviewConflict(f"Tool review {pin_id} does not exist or is already decided.")
    return pin


@router.get("")
async def list_reviews(
    principal: AdminPrincipal,
    services: ServicesDep,
    status: Literal["pending_review", "approved", "rejected"] = Query("pending_review"),
) -> Response:
    pins = await services.tools.reviews(PinStatus(status))
    data = [await review_json(services, pin) for pin in pins]
    return json_response({"object": "list", "data": data})


@router.post("/{pin_id}/approve")
async def approve(pin_id: RowId, principal: AdminPrincipal, services: ServicesDep) -> Response:
    pin = await decide_review(services, pin_id, True, principal.key_id)
    return json_response(pin.to_json())


@router.post("/{pin_id}/reject")
async def reject(pin_id: RowId, principal: AdminPrincipal, services: ServicesDep) -> Response:
    pin = await decide_review(services, pin_id, False, principal.key_id)
    return json_response(pin.to_json())
