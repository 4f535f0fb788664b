"""Signing in with an admin API key, and out. The sign-in form has its own CSRF token
(double-submit: a cookie and a hidden field must match), since there is no session yet."""

from __future__ import annotations

import math
from typing import Annotated

from fastapi import APIRouter, Form, Request
from starlette.responses import RedirectResponse, Response

from accounts.keys import key_prefix
from admin.ui.rendering import render
from admin.ui.security import (
    LOGIN_COOKIE,
    SESSION_COOKIE,
    CsrfRejected,
    SecuredRoute,
    SessionsDep,
    SignedIn,
    check_csrf,
    clear_cookie,
    cookie_name,
    new_token,
    set_cookie,
)
from admin.ui.sessions import same_token
from gateway.auth import ServicesDep
from gateway.services import Services

router = APIRouter(prefix="/admin", route_class=SecuredRoute, include_in_schema=False)

LOGIN_FORM_SECONDS = 1800


def login_page(
    request: Request, services: Services, error: str | None, status_code: int = 200
) -> Response:
    token = new_token()
    settings = services.settings.admin_ui
    response = render(
        request,
        "login.html",
        {
            "csrf_token": token,
            "error": error,
            "expired": "expired" in request.query_params,
            "sso": settings.oidc.display_name if settings.oidc is not None else None,
            "api_key_sign_in": settings.api_key_sign_in,
        },
        status_code=status_code,
    )
    set_cookie(request, response, LOGIN_COOKIE, token, LOGIN_FORM_SECONDS)
    return response


@router.get("/login")
async def login_form(request: Request, services: ServicesDep) -> Response:
    return login_page(request, services, None)


@router.post("/login")
async def login(
    request: Request,
    services: ServicesDep,
    sessions: SessionsDep,
    api_key: Annotated[str, Form(max_length=200)],
    csrf_token: Annotated[str, Form(max_length=100)] = "",
) -> Response:
    expected = request.cookies.get(cookie_name(request, LOGIN_COOKIE), "")
    if not expected or not same_token(csrf_token, expected):
        raise CsrfRejected
    client = request.client.host if request.client else "unknown"
    if not services.settings.admin_ui.api_key_sign_in:
        await sessions.refused(None, client, "api_key_sign_in_off")
        return login_page(request, services, "Sign-in with an API key is turned off.", 403)
    api_key = api_key.strip()
    wait = await services.sign_in.admit(client, key_prefix(api_key))
    if wait is not None:
        await sessions.refused(None, client, "throttled")
        message = "Too many sign-in attempts; try again in a minute."
        response = login_page(request, services, message, 429)
        response.headers["retry-after"] = str(max(1, math.ceil(wait)))
        return response
    principal = await services.keys.authenticate(api_key)
    if principal is None:
        await sessions.refused(None, client, "invalid_key")
        return login_page(request, services, "That key is not valid or has been revoked.", 401)
    if not principal.is_admin:
        await sessions.refused(principal.key_id, client, "not_admin")
        return login_page(request, services, "That key does not have the admin role.", 403)
    token = await sessions.open(principal.key_id, client)
    response = RedirectResponse("/admin", status_code=303)
    lifetime = int(services.settings.admin_ui.session_seconds)
    set_cookie(request, response, SESSION_COOKIE, token, lifetime)
    clear_cookie(request, response, LOGIN_COOKIE)
    return response


@router.post("/logout")
async def logout(
    request: Request,
    session: SignedIn,
    sessions: SessionsDep,
    csrf_token: Annotated[str, Form(max_length=100)] = "",
) -> Response:
    check_csrf(session, csrf_token)
    token = request.cookies.get(cookie_name(request, SESSION_COOKIE), "")
    await sessions.close(token)
    response = RedirectResponse("/admin/login", status_code=303)
    clear_cookie(request, response, SESSION_COOKIE)
    return response
