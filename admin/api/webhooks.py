"""Webhook deliveries, newest first: what reached the reviewers' channels and what did not."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter
from starlette.responses import Response

from gateway.auth import AdminPrincipal, ServicesDep
from gateway.responses import json_response

router = APIRouter(prefix="/v1/admin/webhooks", tags=["admin"])


@router.get("/deliveries")
async def list_deliveries(
    admin: AdminPrincipal,
    services: ServicesDep,
    status: Literal["pending", "delivered", "gave_up"] | None = None,
) -> Response:
    """``status=pending`` includes deliveries being retried (``attempts`` > 0, ``last_error``)."""
    rows = await services.notifier.outbox.recent(status)
    return json_response({"object": "list", "data": rows})
