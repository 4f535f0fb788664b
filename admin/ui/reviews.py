"""Tool definitions held for review, each beside the definition approved before it."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Form, Request
from starlette.responses import RedirectResponse, Response

from admin import RowId
from admin.api.reviews import decide_review
from admin.ui.rendering import render, side_by_side
from admin.ui.security import SecuredRoute, SignedIn, check_csrf
from admin.ui.sessions import SessionInfo
from gateway.auth import ServicesDep
from gateway.errors import report_of
from gateway.services import Services
from governance.errors import ReviewConflict

router = APIRouter(prefix="/admin", route_class=SecuredRoute, include_in_schema=False)


async def _reviews_page(
    request: Request,
    services: Services,
    session: SessionInfo,
    error: str | None = None,
    status_code: int = 200,
) -> Response:
    reviews = []
    for pin in await services.tools.reviews():
        previous = await services.tools.previous_review(pin)
        rows = side_by_side(previous.definition if previous else None, pin.definition)
        reviews.append({"pin": pin, "previous": previous, "rows": rows})
    context = {
        "reviews": reviews,
        "error": error,
        "notice": "Decision saved." if "done" in request.query_params else None,
        "pinning": services.settings.tool_pinning,
    }
    return render(request, "reviews.html", context, session, status_code)


@router.get("/reviews")
async def reviews_page(request: Request, services: ServicesDep, session: SignedIn) -> Response:
    return await _reviews_page(request, services, session)


@router.post("/reviews/{pin_id}/{verdict}")
async def decide(
    request: Request,
    pin_id: RowId,
    *,
    verdict: Literal["approve", "reject"],
    services: ServicesDep,
    session: SignedIn,
    csrf_token: Annotated[str, Form(max_length=100)] = "",
) -> Response:
    check_csrf(session, csrf_token)
    try:
        await decide_review(services, pin_id, verdict == "approve", session.key_id)
    except ReviewConflict as exc:
        return await _reviews_page(request, services, session, exc.message, report_of(exc).status)
    return RedirectResponse("/admin/reviews?done=1", status_code=303)
