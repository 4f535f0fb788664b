"""Connecting an authorization-code tool server from the Servers page.

"Connect" (an admin's signed-in form) sends the browser to the authorization server with a
PKCE request, and leaves the request sealed in a cookie; the authorization server sends the
browser back to ``/admin/oauth/callback``, on any replica, which exchanges the code, stores the
tokens for every replica, audits and reconnects the server.

The callback arrives from another site, so the admin session's cookie (SameSite=Strict) is not
sent with it: the sealed request cookie (SameSite=Lax, which top-level navigations carry) is
what authorizes it. It was set for the admin who began, names them, and lasts ten minutes.
"""

from __future__ import annotations

import hashlib
from typing import Annotated
from urllib.parse import parse_qs, urlsplit

from fastapi import APIRouter, Form, Request
from starlette.responses import Response

from admin.ui.rendering import render
from admin.ui.security import SecuredRoute, SignedIn, check_csrf, cookie_name, is_tls
from gateway.auth import ServicesDep
from gateway.services import Services
from llm_service.errors import InvalidRequest
from tool_servers.connect import CONSENT_SECONDS, EXPIRED, ServerConnections
from tool_servers.errors import ConsentExpired

router = APIRouter(prefix="/admin", route_class=SecuredRoute, include_in_schema=False)
CALLBACK_PATH = "/admin/oauth/callback"
CONNECTED = "/admin/servers?done=connected"


def _connections(services: Services) -> ServerConnections:
    connections = services.tool_servers.connections
    if connections is None:
        raise InvalidRequest("This gateway's tool catalog takes no OAuth connections.")
    return connections


def _cookie(request: Request, state: str) -> str:
    # One cookie per request (named by its state), so two servers can be connected at once.
    return cookie_name(request, f"gw_admin_oauth_{hashlib.sha256(state.encode()).hexdigest()[:16]}")


@router.post("/servers/{name}/connect")
async def connect_server(
    request: Request,
    name: str,
    services: ServicesDep,
    session: SignedIn,
    csrf_token: Annotated[str, Form(max_length=100)] = "",
) -> Response:
    check_csrf(session, csrf_token)
    redirect_uri = str(request.url_for("oauth_callback"))
    url, sealed = await _connections(services).begin(name, redirect_uri, session.key_id)
    # A page that moves on by itself, not a 303: the admin pages' CSP (`form-action 'self'`)
    # forbids a form's redirect to another origin, and the authorization server is one.
    response = render(request, "connecting.html", {"server": name, "next": url}, session)
    response.headers["refresh"] = f"0; url={url}"
    state = _state_of(url)
    response.set_cookie(
        _cookie(request, state),
        sealed,
        max_age=CONSENT_SECONDS,
        path="/",
        secure=is_tls(request),
        httponly=True,
        samesite="lax",
    )
    return response


def _state_of(authorization_url: str) -> str:
    return parse_qs(urlsplit(authorization_url).query)["state"][0]


@router.get("/oauth/callback", name="oauth_callback")
async def oauth_callback(
    request: Request,
    services: ServicesDep,
    *,
    state: str = "",
    code: str = "",
    iss: str | None = None,
    error: str = "",
    error_description: str = "",
) -> Response:
    connections = _connections(services)
    cookie = _cookie(request, state) if state else ""
    sealed = request.cookies.get(cookie) if cookie else None
    if not sealed:
        raise ConsentExpired(EXPIRED)
    pending, key_id = connections.opened(sealed, state)
    if error or not code:
        reason = f"{error or 'no code'}" + (f": {error_description}" if error_description else "")
        raise InvalidRequest(
            f"The authorization server did not authorize `{pending.server}` ({reason})."
        )
    await connections.complete(pending, key_id, code, iss)
    response = render(
        request, "connected.html", {"server": pending.server, "next": CONNECTED}, None
    )
    # A page that moves on by itself rather than a redirect: the navigation that follows starts
    # on this site, so the browser sends the admin session's (SameSite=Strict) cookie again.
    response.headers["refresh"] = f"0; url={CONNECTED}"
    response.delete_cookie(cookie, path="/", secure=is_tls(request), httponly=True, samesite="lax")
    return response
