"""Signing in to the admin UI with the company's OpenID Connect provider.

``/admin/sso/start`` sends the browser to the provider with a fresh state, nonce and PKCE
verifier, which it carries back in a short-lived cookie (so the callback works on any replica);
``/admin/sso/callback`` checks the state, exchanges the code, maps the person's groups to roles
and opens the same server-side session an API-key sign-in opens, for the row standing for that
person (``KeyStore.sso_person``): the audit log and self-approval then name the person.
"""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import APIRouter, Query, Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from accounts.sso.client import OidcClient, PendingSignIn, SignInFailed
from admin.ui.security import (
    SESSION_COOKIE,
    SecuredRoute,
    SessionsDep,
    clear_cookie,
    cookie_name,
    is_tls,
    set_cookie,
)
from admin.ui.signin import login_page
from gateway.auth import ServicesDep
from gateway.services import Services

router = APIRouter(prefix="/admin/sso", route_class=SecuredRoute, include_in_schema=False)

PENDING_COOKIE = "gw_admin_sso"
PENDING_SECONDS = 600
# The session cookie is SameSite=Strict, so the browser would not send it on a redirect that
# began at the provider's site; a page of ours that moves on starts a same-site navigation.
_ONWARD = (
    '<!doctype html><meta http-equiv="refresh" content="0;url=/admin">'
    '<title>Signed in</title><p><a href="/admin">Continue to the admin UI</a></p>'
)


def _callback_url(request: Request, client: OidcClient) -> str:
    return client.redirect_uri(str(request.url_for("sso_callback")))


@router.get("/start")
async def sso_start(request: Request, services: ServicesDep) -> Response:
    client = services.oidc
    if client is None:
        return login_page(request, services, "Single sign-on is not configured.", 404)
    try:
        url, pending = await client.start(_callback_url(request, client))
    except SignInFailed as exc:
        return login_page(request, services, f"Single sign-on failed: {exc}", 502)
    response = RedirectResponse(url, status_code=303)
    # Lax, not Strict: the callback is a top-level navigation coming from the provider's site.
    response.set_cookie(
        cookie_name(request, PENDING_COOKIE),
        pending.cookie(),
        max_age=PENDING_SECONDS,
        path="/",
        secure=is_tls(request),
        httponly=True,
        samesite="lax",
    )
    return response


class _Refused(Exception):
    def __init__(self, reason: str, message: str, status: int) -> None:
        super().__init__(reason)
        self.reason, self.message, self.status = reason, message, status


@router.get("/callback", name="sso_callback")
async def sso_callback(
    request: Request,
    services: ServicesDep,
    sessions: SessionsDep,
    *,
    code: Annotated[str, Query(max_length=4096)] = "",
    state: Annotated[str, Query(max_length=200)] = "",
    error: Annotated[str, Query(max_length=200)] = "",
) -> Response:
    address = request.client.host if request.client else "unknown"
    try:
        person_id = await _signed_in_person(request, services, code, state, error)
    except _Refused as refused:
        await sessions.refused(None, address, refused.reason)
        return login_page(request, services, refused.message, refused.status)
    token = await sessions.open(person_id, address)
    response = HTMLResponse(_ONWARD)
    lifetime = int(services.settings.admin_ui.session_seconds)
    set_cookie(request, response, SESSION_COOKIE, token, lifetime)
    clear_cookie(request, response, PENDING_COOKIE)
    return response


async def _signed_in_person(
    request: Request, services: Services, code: str, state: str, error: str
) -> int:
    """The id of the row standing for the person the provider signed in, once every check
    passed; ``_Refused`` (audited by the caller) otherwise."""
    client = services.oidc
    if client is None:
        raise _Refused("sso_not_configured", "Single sign-on is not configured.", 404)
    carried = request.cookies.get(cookie_name(request, PENDING_COOKIE), "")
    pending = PendingSignIn.from_cookie(carried)
    if pending is None or not hmac.compare_digest(pending.state, state):
        raise _Refused("sso_state_mismatch", "That sign-in link is stale; start again.", 400)
    if error or not code:
        reason = f"sso_provider_error:{error or 'no_code'}"
        raise _Refused(reason, "The identity provider did not sign you in.", 401)
    try:
        identity = await client.finish(code, _callback_url(request, client), pending)
    except SignInFailed as exc:
        raise _Refused("sso_token_refused", f"Single sign-on failed: {exc}.", 401) from exc
    roles = client.roles_for(identity)
    if "admin" not in roles:
        message = f"{identity.person} is not in a group that may administer the gateway."
        raise _Refused(f"not_admin:{identity.person}", message, 403)
    person = await services.keys.sso_person(identity.subject, identity.person, roles)
    if person is None:
        message = "Your admin access has been revoked."
        raise _Refused(f"revoked:{identity.person}", message, 403)
    return person.id
