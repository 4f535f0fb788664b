"""The read-mostly pages: keys (create, change settings, revoke) and the audit log."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Query, Request
from pydantic import ValidationError
from starlette.responses import RedirectResponse, Response

from admin import RowId
from admin.api.audit import AuditFilter, audit_page
from admin.api.keys import stored_changes, validate_roles
from admin.ui.rendering import render
from admin.ui.security import SecuredRoute, SignedIn, check_csrf
from admin.ui.spend_pages import first_error, form_changes, spend_this_month
from db.audit_chain import verify
from db.base import MAX_ROW_ID, utcnow
from gateway.auth import ServicesDep
from llm_service.errors import GatewayError, InvalidRequest

# The audit page checks the newest events of the hash chain on each view (the whole chain:
# `llm-gateway audit verify` or GET /v1/admin/audit/chain).
CHAIN_CHECKED_ON_PAGE = 10_000

router = APIRouter(prefix="/admin", route_class=SecuredRoute, include_in_schema=False)


async def _keys_page(
    request: Request,
    services: ServicesDep,
    session: SignedIn,
    created: tuple[str, str] | None = None,
    error: str | None = None,
) -> Response:
    keys = await services.keys.list()
    context = {
        "keys": keys,
        "created": created,
        "error": error,
        "spend": await spend_this_month(services),
        "now": utcnow(),
    }
    return render(request, "keys.html", context, session, 400 if error else 200)


@router.get("/keys")
async def keys_page(request: Request, services: ServicesDep, session: SignedIn) -> Response:
    return await _keys_page(request, services, session)


@router.post("/keys")
async def create_key(
    request: Request,
    services: ServicesDep,
    session: SignedIn,
    *,
    name: Annotated[str, Form(min_length=1, max_length=200)],
    roles: Annotated[str, Form(max_length=500)],
    owner: Annotated[str, Form(max_length=200)] = "",
    csrf_token: Annotated[str, Form(max_length=100)] = "",
) -> Response:
    check_csrf(session, csrf_token)
    try:
        cleaned = validate_roles(roles.replace(",", " ").split())
    except InvalidRequest as exc:
        return await _keys_page(request, services, session, error=exc.message)
    key, info = await services.keys.create(
        name.strip(), cleaned, owner.strip() or None, session.key_id
    )
    # Rendered, not redirected: the key is shown this once and never stored in clear.
    return await _keys_page(request, services, session, created=(info.name, key))


@router.post("/keys/{key_id}/revoke")
async def revoke_key(
    request: Request,
    key_id: RowId,
    services: ServicesDep,
    session: SignedIn,
    csrf_token: Annotated[str, Form(max_length=100)] = "",
) -> Response:
    check_csrf(session, csrf_token)
    if key_id == session.key_id:
        # Revoking it would end this very session mid-page; another admin's key can do it.
        error = "You cannot revoke the key you are signed in with."
        return await _keys_page(request, services, session, error=error)
    await services.keys.revoke(key_id, session.key_id)
    return RedirectResponse("/admin/keys", status_code=303)


@router.get("/audit")
async def audit_log(
    request: Request,
    services: ServicesDep,
    session: SignedIn,
    *,
    tool: Annotated[str | None, Query(max_length=200)] = None,
    conversation: Annotated[str | None, Query(max_length=36)] = None,
    action: Annotated[str | None, Query(max_length=64)] = None,
    before: Annotated[int | None, Query(ge=1, le=MAX_ROW_ID)] = None,
) -> Response:
    wanted = AuditFilter(tool or None, conversation or None, None, action or None, before)
    page = await audit_page(services.sessions, wanted)
    names = {info.id: f"{info.name} ({info.owner})" for info in await services.keys.list()}
    chain = await verify(services.sessions, latest=CHAIN_CHECKED_ON_PAGE)
    context = {"page": page, "wanted": wanted, "names": names, "chain": chain}
    return render(request, "audit.html", context, session)


@router.post("/keys/{key_id}/settings")
async def change_key_settings(
    request: Request,
    key_id: RowId,
    services: ServicesDep,
    session: SignedIn,
    *,
    team: Annotated[str, Form(max_length=100)] = "",
    expires: Annotated[str, Form(max_length=10)] = "",
    models: Annotated[str, Form(max_length=5000)] = "",
    requests_per_minute: Annotated[str, Form(max_length=20)] = "",
    tokens_per_minute: Annotated[str, Form(max_length=20)] = "",
    budget_per_day: Annotated[str, Form(max_length=20)] = "",
    budget_per_month: Annotated[str, Form(max_length=20)] = "",
    csrf_token: Annotated[str, Form(max_length=100)] = "",
) -> Response:
    """The same checks and audit event as ``PATCH /v1/admin/keys/{id}``."""
    check_csrf(session, csrf_token)
    try:
        body = form_changes(
            team=team,
            expires=expires,
            models=models,
            requests_per_minute=requests_per_minute,
            tokens_per_minute=tokens_per_minute,
            budget_per_day=budget_per_day,
            budget_per_month=budget_per_month,
        )
        known = [model.name for model in services.settings.models]
        changed = await services.keys.change(key_id, stored_changes(body, known), session.key_id)
    except ValidationError as exc:
        error = f"Key {key_id} not changed: {first_error(exc)}"
        return await _keys_page(request, services, session, error=error)
    except GatewayError as exc:
        error = f"Key {key_id} not changed: {exc.message}"
        return await _keys_page(request, services, session, error=error)
    if changed is None:
        return await _keys_page(request, services, session, error="No such active key.")
    return RedirectResponse("/admin/keys", status_code=303)
