"""Signing in to the admin UI with the company's OpenID Connect provider.

``/admin/sso/start`` sends the browser to the provider with a fresh state, nonce and PKCE
verifier, which it carries back in a short-lived cookie (so the callback works on any replica);
``/admin/sso/callback`` checks the state, exchanges the code, maps the person's groups to roles
and opens the same server-side session an API-key sign-in opens, for the row standing for that
person (``KeyStore.sso_person``): the audit log and self-approval then name the person.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from accounts.sso.client import (
    OidcClient,
    PendingSignIn,
    ProviderUnavailable,
    SignInFailed,
    error_code,
)
from admin.ui.security import (
    SESSION_COOKIE,
    SecuredRoute,
    SessionsDep,
    clear_cookie,
    cookie_name,
    is_tls,
    set_cookie,
)
from admin.ui.sessions import same_token
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
# What the callback reads of its query, and how long each may be. Each may come once: OAuth
# forbids repeating a parameter (RFC 6749 section 3.1), and two codes leave which was meant open.
_CALLBACK_PARAMETERS = {"code": 4096, "state": 200, "error": 200, "error_description": 500}


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
async def sso_callback(request: Request, services: ServicesDep, sessions: SessionsDep) -> Response:
    """Every way this can fail, the provider's or the browser's, ends on the sign-in page with
    the reason (audited), never an error page: the pending sign-in is used up either way."""
    address = request.client.host if request.client else "unknown"
    try:
        person_id = await _signed_in_person(request, services, _callback_parameters(request))
    except _Refused as refused:
        await sessions.refused(None, address, refused.reason)
        page = login_page(request, services, refused.message, refused.status)
        clear_cookie(request, page, PENDING_COOKIE)
        return page
    token = await sessions.open(person_id, address)
    response = HTMLResponse(_ONWARD)
    lifetime = int(services.settings.admin_ui.session_seconds)
    set_cookie(request, response, SESSION_COOKIE, token, lifetime)
    clear_cookie(request, response, PENDING_COOKIE)
    return response


def _callback_parameters(request: Request) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, limit in _CALLBACK_PARAMETERS.items():
        values = request.query_params.getlist(name)
        if len(values) > 1:
            message = f"The sign-in answer repeats `{name}`; start again."
            raise _Refused("sso_repeated_parameter", message, 400)
        value = values[0] if values else ""
        if len(value) > limit:
            message = f"The sign-in answer's `{name}` is longer than {limit} characters."
            raise _Refused("sso_parameter_too_long", message, 400)
        found[name] = value
    return found


def _provider_error(parameters: dict[str, str]) -> _Refused:
    code = error_code(parameters["error"] or "no_code")
    message = f"The identity provider did not sign you in (`{code}`)"
    described = parameters["error_description"].replace("\x00", "")
    if described:
        # Shown (escaped) only once the state matched: it came back from this browser's own
        # sign-in, not from a link someone else made.
        message += f": {described[:200]}"
    return _Refused(f"sso_provider_error:{code}", message + ".", 401)


async def _signed_in_person(
    request: Request, services: Services, parameters: dict[str, str]
) -> int:
    """The id of the row standing for the person the provider signed in, once every check
    passed; ``_Refused`` (audited by the caller) otherwise."""
    client = services.oidc
    if client is None:
        raise _Refused("sso_not_configured", "Single sign-on is not configured.", 404)
    carried = request.cookies.get(cookie_name(request, PENDING_COOKIE), "")
    pending = PendingSignIn.from_cookie(carried)
    if pending is None or not same_token(parameters["state"], pending.state):
        raise _Refused("sso_state_mismatch", "That sign-in link is stale; start again.", 400)
    code = parameters["code"]
    if parameters["error"] or not code:
        raise _provider_error(parameters)
    try:
        identity = await client.finish(code, _callback_url(request, client), pending)
    except ProviderUnavailable as exc:
        raise _Refused("sso_provider_unavailable", f"Single sign-on failed: {exc}.", 502) from exc
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
