"""What every admin page shares: security headers, the session cookie, CSRF checks, sign-in."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.responses import RedirectResponse, Response

from admin.ui.rendering import render
from admin.ui.sessions import AdminSessions, SessionInfo
from gateway.context import request_context
from gateway.errors import report_of
from gateway.services import Services, get_services
from llm_service.errors import GatewayError

# No inline script or style anywhere, so the policy can forbid both; nothing may frame a page.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
SESSION_COOKIE = "gw_admin_session"
LOGIN_COOKIE = "gw_admin_login"


class SignInRequired(Exception):
    """No live session: the page answers with a redirect to the sign-in form."""

    def __init__(self, expired: bool) -> None:
        super().__init__("sign-in required")
        self.expired = expired


class CsrfRejected(Exception):
    """A form came without this session's CSRF token."""


class SecuredRoute(APIRoute):
    """Adds the security headers to every admin page, turns missing sessions and bad CSRF
    tokens into a redirect and a 403 page, and refused input into an error page (a person is
    reading: HTML, not the API's JSON)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def secured(request: Request) -> Response:
            try:
                response = await handler(request)
            except SignInRequired as exc:
                target = "/admin/login?expired=1" if exc.expired else "/admin/login"
                response = RedirectResponse(target, status_code=303)
            except CsrfRejected:
                response = Response(
                    "The form was stale or forged (CSRF token mismatch). Reload and try again.",
                    status_code=403,
                    media_type="text/plain",
                )
            except GatewayError as exc:
                report = report_of(exc)
                request_context(request).fail(exc, report.error_type)
                response = await error_page(request, exc.message, report.status)
            except RequestValidationError as exc:
                request_context(request).error_type = "invalid_request_error"
                response = await error_page(request, form_problem(exc), 400)
            response.headers.update(SECURITY_HEADERS)
            return response

        return secured


def form_problem(exc: RequestValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return "The form was not valid."
    first = errors[0]
    field = str(first.get("loc", ("", "form"))[-1])
    return f"The form's `{field}` was not valid: {first.get('msg', 'invalid value')}."


async def error_page(
    request: Request, message: str, status_code: int, heading: str = "That did not work"
) -> Response:
    """An error as a page, with the navigation when the reader is signed in."""
    session = await optional_session(request)
    context = {"error": message, "heading": heading, "form_error": status_code != 404}
    return render(request, "error.html", context, session, status_code)


async def optional_session(request: Request) -> SessionInfo | None:
    token = request.cookies.get(cookie_name(request, SESSION_COOKIE))
    if not token:
        return None
    services: Services = request.app.state.services
    return await admin_sessions(services).find(token)


def is_tls(request: Request) -> bool:
    return request.url.scheme == "https"


def cookie_name(request: Request, base: str) -> str:
    # Over TLS the __Host- prefix makes the browser refuse the cookie unless it is Secure,
    # host-only and for path /, so a sibling subdomain cannot plant or shadow it.
    return f"__Host-{base}" if is_tls(request) else base


def set_cookie(request: Request, response: Response, base: str, value: str, seconds: int) -> None:
    response.set_cookie(
        cookie_name(request, base),
        value,
        max_age=seconds,
        path="/",
        secure=is_tls(request),
        httponly=True,
        samesite="strict",
    )


def clear_cookie(request: Request, response: Response, base: str) -> None:
    response.delete_cookie(
        cookie_name(request, base),
        path="/",
        secure=is_tls(request),
        httponly=True,
        samesite="strict",
    )


def new_token() -> str:
    return secrets.token_urlsafe(32)


def admin_sessions(services: Annotated[Services, Depends(get_services)]) -> AdminSessions:
    return AdminSessions(services.sessions, services.settings.admin_ui.session_seconds)


SessionsDep = Annotated[AdminSessions, Depends(admin_sessions)]


async def signed_in(request: Request, sessions: SessionsDep) -> SessionInfo:
    token = request.cookies.get(cookie_name(request, SESSION_COOKIE))
    if not token:
        raise SignInRequired(expired=False)
    info = await sessions.find(token)
    if info is None:
        raise SignInRequired(expired=True)
    context = request_context(request)
    context.key_id = info.key_id
    context.key_name = info.key_name
    return info


SignedIn = Annotated[SessionInfo, Depends(signed_in)]


def check_csrf(info: SessionInfo, presented: str | None) -> None:
    if not info.csrf_matches(presented):
        raise CsrfRejected
