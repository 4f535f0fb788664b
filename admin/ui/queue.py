"""The approval queue: the page, its live feed (SSE) and the approve / reject forms."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Annotated, Literal

import orjson
from fastapi import APIRouter, Form, Request
from starlette.responses import RedirectResponse, Response

from admin.ui.cards import build_cards
from admin.ui.queue_rows import pending_page
from admin.ui.rendering import render, render_fragment
from admin.ui.running import running_calls
from admin.ui.security import SecuredRoute, SignedIn, check_csrf
from admin.ui.sessions import SessionInfo
from chat_service.errors import DecisionConflict, SelfApprovalForbidden, ToolCallNotFound
from chat_service.tool_call_view import CallState
from db.base import utcnow
from gateway.auth import ServicesDep
from gateway.errors import report_of
from gateway.services import Services
from gateway.shutdown import Drain
from gateway.sse import EventStreamResponse, frame

router = APIRouter(prefix="/admin", route_class=SecuredRoute, include_in_schema=False)

RECENT_DECISIONS = 15
DONE_NOTICES = {
    "approved": "Approved: the call runs now and the conversation resumes.",
    "rejected": "Rejected: the model is told the reason and the conversation resumes.",
    "partial": "Approval recorded: the call runs once another admin approves it too.",
}


async def _queue_page(
    request: Request,
    services: Services,
    session: SessionInfo,
    error: str | None = None,
    status_code: int = 200,
) -> Response:
    page = await pending_page(services.sessions, _page_number(request))
    pending = await build_cards(services, page.calls)
    decided = await services.tool_calls.decided(limit=RECENT_DECISIONS)
    notice = DONE_NOTICES.get(request.query_params.get("done", ""))
    context = {
        "cards": pending,
        "page": page,
        "running": await running_calls(services),
        "decided": decided,
        "notice": notice,
        "error": error,
    }
    return render(request, "queue.html", context, session, status_code)


def _page_number(request: Request) -> int:
    """``?page=N`` from 1; anything else is the first page."""
    number = request.query_params.get("page", "")
    return int(number) if number.isdigit() and 0 < len(number) < 7 else 1


@router.get("")
async def queue_page(request: Request, services: ServicesDep, session: SignedIn) -> Response:
    return await _queue_page(request, services, session)


@router.post("/calls/{record_id}/{verdict}")
async def decide(
    request: Request,
    record_id: str,
    *,
    verdict: Literal["approve", "reject"],
    services: ServicesDep,
    session: SignedIn,
    csrf_token: Annotated[str, Form(max_length=100)] = "",
    reason: Annotated[str, Form(max_length=2000)] = "",
) -> Response:
    check_csrf(session, csrf_token)
    approve = verdict == "approve"
    try:
        # Counted, audited and resumed as a decision through the API is.
        call = await services.approvals.decide(
            record_id, session.key_id, approve, reason.strip() or None
        )
    except (DecisionConflict, SelfApprovalForbidden, ToolCallNotFound) as exc:
        return await _queue_page(request, services, session, exc.message, report_of(exc).status)
    done = "approved" if approve else "rejected"
    if call.state is CallState.AWAITING_APPROVAL:
        done = "partial"  # one of two approvals
    return RedirectResponse(f"/admin?done={done}", status_code=303)


def _shown(entry: str) -> tuple[str, int]:
    record_id, _, approvals = entry.partition(":")
    return record_id, int(approvals) if approvals.isdigit() else 0


def _event(kind: str, data: dict[str, str]) -> bytes:
    return frame(orjson.dumps(data), kind)


async def _queue_feed(
    request: Request, services: Services, session: SessionInfo
) -> AsyncIterator[bytes]:
    """Polls the database, not this process: approvals may be decided on any replica."""
    # "record_id" or "record_id:approvals": a card whose approvals changed is sent again.
    shown = dict(_shown(entry) for entry in request.query_params.getlist("shown")[:500])
    poll = services.settings.admin_ui.queue_poll_seconds
    drain: Drain = request.app.state.drain
    yield b": live\n\n"
    running_shown = decided_shown = ""
    number = _page_number(request)
    # Ending on drain lets the browser's EventSource reconnect to a replica that stays up.
    while not drain.draining and not await request.is_disconnected():
        if session.expires_at <= utcnow():
            yield _event("session-expired", {})
            return
        # The cards of the page it follows: calls before them decided move later ones in.
        calls = (await pending_page(services.sessions, number)).calls
        current = {call.record_id: len(call.approvals) for call in calls}
        fresh = [c for c in calls if shown.get(c.record_id) != len(c.approvals)]
        for card in await build_cards(services, fresh):
            html = render_fragment("_card.html", {"card": card, "session": session})
            yield _event("call", {"record_id": card.call.record_id, "html": html})
        for gone in shown.keys() - current.keys():
            # The state lets the page keep an expired card, marked, instead of dropping it.
            call = await services.tool_calls.get(gone)
            state = call.state.value if call else "unknown"
            yield _event("gone", {"record_id": gone, "state": state})
        shown = current
        running = render_fragment("_running.html", {"running": await running_calls(services)})
        if running != running_shown:
            yield _event("running", {"html": running})
            running_shown = running
        calls_decided = await services.tool_calls.decided(limit=RECENT_DECISIONS)
        decided = render_fragment("_decided.html", {"decided": calls_decided})
        if decided != decided_shown:
            yield _event("decided", {"html": decided})
            decided_shown = decided
        await asyncio.sleep(poll)


@router.get("/queue/events")
async def queue_events(
    request: Request,
    services: ServicesDep,
    session: SignedIn,
) -> Response:
    """Server-sent events: ``call`` (a new held call, as its rendered card), ``gone`` (decided
    or expired anywhere, with the call's new state), ``running`` (the running calls' table,
    when it changed), ``decided`` (the recently decided table, when it changed: a decision, or
    a decided call that ran), ``session-expired``. Cards already on the
    page come as ``shown``."""
    return EventStreamResponse(_queue_feed(request, services, session))
