"""Webhook deliveries: what reached the reviewers' channels, what is being retried, what failed."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from admin.ui.rendering import render
from admin.ui.security import SecuredRoute, SignedIn
from gateway.auth import ServicesDep

router = APIRouter(prefix="/admin", route_class=SecuredRoute, include_in_schema=False)


@router.get("/webhooks")
async def webhooks_page(request: Request, services: ServicesDep, session: SignedIn) -> Response:
    deliveries = await services.notifier.outbox.recent(None)
    # Given up, or being retried; a delivery that landed after retries keeps its last error.
    failing = [
        d for d in deliveries if d["status"] != "delivered" and (d["attempts"] or d["last_error"])
    ]
    context = {
        "deliveries": deliveries,
        "failing": len(failing),
        "configured": services.settings.notifications.webhooks,
    }
    return render(request, "webhooks.html", context, session)
