"""Errors at the HTTP boundary: the edge's own error tree, and every failure made a JSON error
body, by type: ``REPORTS`` is the one table of statuses, types and codes for every layer's errors.

    GatewayError (llm_service.errors)
    ├── AuthenticationFailed   no key, or one the gateway does not know
    ├── PermissionDenied       the key may not use this model or route
    ├── ResponseNotFound       no stored response of that id for this key
    ├── McpUnavailable         the /mcp endpoint is not serving (no tool catalog)
    ├── PromptRefused          a chat prompt the guardrails deny (rule and detector named)
    └── TooManyMessages        a Responses chain over ``max_messages``

The body has the OpenAI shape unless the matched route belongs to an API with its own shape
(``ErrorShapedRoute``, e.g. the Anthropic Messages API), so each SDK raises its typed errors.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import structlog
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match
from starlette.types import Scope

from accounts.errors import BudgetExceeded, KeyNotFound, OwnKeyRevocation, RateLimited
from chat_service.errors import (
    ApprovalForbidden,
    ApprovalRefused,
    ConversationBusy,
    ConversationNotFound,
    DecisionConflict,
    ErrorReport,
    HistoryTooLarge,
    InputNotPending,
    InvalidInput,
    SelfApprovalForbidden,
    ToolCallNotFound,
    TurnFailed,
)
from db.transactions import DATABASE_ERRORS
from db.unavailable import database_unavailable
from gateway.context import request_context
from gateway.responses import json_response
from governance.errors import ReviewConflict, ToolNotFound
from llm_service.errors import (
    ContextWindowExceeded,
    GatewayError,
    InternalError,
    InvalidRequest,
    ModelNotFound,
    ModelUnavailable,
    UpstreamAuthError,
    UpstreamBadRequest,
    UpstreamConnectionError,
    UpstreamError,
    UpstreamOverloaded,
    UpstreamProtocolError,
    UpstreamQuotaExceeded,
    UpstreamRateLimited,
    UpstreamServerError,
    UpstreamTimeout,
)
from tool_servers.errors import ConnectFailed, ConsentExpired, ServerConflict, ServerNotFound

log = structlog.get_logger("gateway.errors")
ExceptionHandler = Callable[[Request, Exception], Awaitable[Response]]


class AuthenticationFailed(GatewayError):
    """No API key, or one the gateway does not know (or revoked, or expired)."""


class PermissionDenied(GatewayError):
    """The key may not use this model or route."""


class ResponseNotFound(GatewayError):
    pass


class McpUnavailable(GatewayError):
    pass


class PromptRefused(GatewayError):
    """A chat prompt the guardrails deny (``guardrails.prompts``): the message names the rule
    and the detector, never what was found."""


class TooManyMessages(GatewayError):
    """``max_messages`` holds for the whole conversation a request sends, stored history too
    (the JSON guard counts only a body's ``messages``)."""


# The one table from every layer's errors to how this edge reports them; an error is reported
# as its nearest class here (the layers below know nothing of HTTP).
R = ErrorReport
_INVALID = "invalid_request_error"

REPORTS: dict[type[GatewayError], ErrorReport] = {
    GatewayError: R(500, "api_error"),
    # llm_service
    InvalidRequest: R(400, _INVALID),
    ModelNotFound: R(404, _INVALID, "model_not_found"),
    InternalError: R(500, "api_error", "internal_error"),
    ModelUnavailable: R(503, "service_unavailable", "model_unavailable"),
    UpstreamError: R(502, "upstream_error"),
    UpstreamAuthError: R(502, "upstream_error", "upstream_auth_failed"),
    UpstreamBadRequest: R(400, _INVALID, "upstream_rejected_request"),
    ContextWindowExceeded: R(400, _INVALID, "context_length_exceeded"),
    UpstreamRateLimited: R(429, "rate_limit_error", "upstream_rate_limited"),
    UpstreamQuotaExceeded: R(429, "insufficient_quota", "upstream_quota_exceeded"),
    UpstreamOverloaded: R(503, "service_unavailable", "upstream_overloaded"),
    UpstreamServerError: R(502, "upstream_error", "upstream_server_error"),
    UpstreamConnectionError: R(502, "upstream_error", "upstream_unreachable"),
    UpstreamTimeout: R(504, "timeout", "upstream_timeout"),
    UpstreamProtocolError: R(502, "upstream_error", "upstream_malformed_response"),
    # accounts
    RateLimited: R(429, "rate_limit_error", "rate_limit_exceeded"),
    BudgetExceeded: R(429, "insufficient_quota", "budget_exceeded"),
    KeyNotFound: R(404, _INVALID, "key_not_found"),
    OwnKeyRevocation: R(409, "conflict", "own_key"),
    # chat_service
    ConversationNotFound: R(404, "not_found_error", "conversation_not_found"),
    ConversationBusy: R(409, "conflict", "turn_in_progress"),
    HistoryTooLarge: R(413, _INVALID, "history_too_large"),
    ToolCallNotFound: R(404, "not_found_error", "tool_call_not_found"),
    DecisionConflict: R(409, "conflict", "decision_conflict"),
    ApprovalRefused: R(409, "conflict", "approval_refused"),
    ApprovalForbidden: R(403, "permission_error", "approval_refused"),
    SelfApprovalForbidden: R(403, "permission_error", "self_approval_forbidden"),
    InputNotPending: R(409, "conflict", "input_not_pending"),
    InvalidInput: R(400, _INVALID, "invalid_input"),
    # governance
    ToolNotFound: R(404, _INVALID, "tool_not_found"),
    ReviewConflict: R(409, _INVALID, "review_conflict"),
    # gateway (the edge itself)
    AuthenticationFailed: R(401, _INVALID, "invalid_api_key"),
    PermissionDenied: R(403, "permission_error", "permission_denied"),
    ResponseNotFound: R(404, _INVALID, "response_not_found"),
    McpUnavailable: R(503, "service_unavailable", "mcp_unavailable"),
    TooManyMessages: R(413, _INVALID, "too_many_messages"),
    PromptRefused: R(400, _INVALID, "guardrail_denied"),
    # tool_servers
    ServerConflict: R(409, _INVALID, "server_conflict"),
    ServerNotFound: R(404, _INVALID, "server_not_found"),
    ConnectFailed: R(502, "upstream_error", "connect_failed"),
    ConsentExpired: R(400, _INVALID, "consent_expired"),
}


def report_of(error: GatewayError) -> ErrorReport:
    """How ``error`` is reported: a turn's failure as it was when it happened, any other error
    as the nearest class of it in the table."""
    if isinstance(error, TurnFailed):
        return error.report
    for kind in type(error).__mro__:
        report = REPORTS.get(kind)
        if report is not None:
            return report
    raise AssertionError("unreachable: GatewayError is in the table")


def error_body(
    message: str, error_type: str, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": param, "code": code}}


def gateway_error_body(exc: GatewayError) -> dict[str, Any]:
    report = report_of(exc)
    return error_body(exc.message, report.error_type, report.code, exc.param)


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """One failure, before it is given the wire shape of the API that was called."""

    status: int
    message: str
    error_type: str
    code: str | None = None
    param: str | None = None


def _openai_body(error: ErrorInfo) -> dict[str, Any]:
    return error_body(error.message, error.error_type, error.code, error.param)


class ErrorShapedRoute(APIRoute):
    """A route whose API has its own error body; subclasses override ``error_body``."""

    def error_body(self, error: ErrorInfo) -> dict[str, Any]:
        return _openai_body(error)


def flat_routes(routes: Iterable[BaseRoute]) -> Iterator[BaseRoute]:
    # FastAPI wraps included routers; their own routes carry the full paths.
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from flat_routes(included.routes)
        else:
            yield route


def shaped_error_body(scope: Scope, error: ErrorInfo) -> dict[str, Any]:
    """The error body in the shape of the API at this path, also before routing has run.

    Middleware that refuses a request early (size, hostile JSON) finds the route the request
    would have reached, so an Anthropic SDK still gets an Anthropic error.
    """
    route = scope.get("route")
    if route is None:
        app = scope.get("app")
        for candidate in flat_routes(getattr(getattr(app, "router", None), "routes", ())):
            if candidate.matches(scope)[0] == Match.FULL:
                route = candidate
                break
    body = route.error_body(error) if isinstance(route, ErrorShapedRoute) else _openai_body(error)
    context = scope.get("state", {}).get("context")
    if context is not None:
        # The log line's error_type is the one the caller got: both shapes keep it at
        # error.type (a 401 is `authentication_error` on /v1/messages, not the OpenAI type).
        context.error_type = body["error"]["type"]
    return body


def _shaped_response(
    request: Request, error: ErrorInfo, headers: dict[str, str] | None = None
) -> Response:
    return json_response(shaped_error_body(request.scope, error), error.status, headers)


async def _gateway_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, GatewayError)
    context = request_context(request)
    report = report_of(exc)
    context.fail(exc, report.error_type)
    if isinstance(exc, ModelUnavailable):
        # The caller hears only "unavailable"; why (an unset key variable, a dead server) is ours.
        log.warning(
            "model_unavailable", request_id=context.request_id, model=exc.model, reason=exc.reason
        )
    headers: dict[str, str] = {}
    retry_after = getattr(exc, "retry_after", None)
    if retry_after is not None:
        headers["retry-after"] = str(max(1, round(retry_after)))
    if isinstance(exc, AuthenticationFailed):
        headers["www-authenticate"] = "Bearer"
    error = ErrorInfo(report.status, exc.message, report.error_type, report.code, exc.param)
    return _shaped_response(request, error, headers)


async def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    request_context(request).error_type = "invalid_request_error"
    errors = exc.errors()
    first = errors[0] if errors else {"loc": (), "msg": "invalid request"}
    loc = [str(part) for part in first.get("loc", ()) if part != "body"]
    if first.get("type") == "json_invalid":
        message, param = "The request body is not valid JSON.", None
    else:
        param = ".".join(loc) or None
        where = f" at `{param}`" if param else ""
        message = f"Invalid request{where}: {first.get('msg', 'invalid value')}"
    return _shaped_response(request, ErrorInfo(400, message, "invalid_request_error", None, param))


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    error_type = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
    request_context(request).error_type = error_type
    error = ErrorInfo(exc.status_code, str(exc.detail), error_type)
    return _shaped_response(request, error, dict(exc.headers or {}))


async def _unexpected_error(request: Request, exc: Exception) -> Response:
    context = request_context(request)
    context.error_type = "api_error"
    log.error("unhandled_error", request_id=context.request_id, exc_info=exc)
    message = f"Internal error. Quote request id {context.request_id} when reporting it."
    return _shaped_response(request, ErrorInfo(500, message, "api_error"))


async def _database_error(request: Request, exc: Exception) -> Response:
    """Registered for the database's error types themselves, not left to the ``Exception``
    handler: Starlette re-raises after that one, and the server then drops the connection the
    answer was written to."""
    if not database_unavailable(exc):
        return await _unexpected_error(request, exc)
    # A restart or failover of the database: the caller retries, nothing is wrong with what it
    # asked. Logged by type only (a driver's message can hold a statement's parameters).
    context = request_context(request)
    context.error_type = "service_unavailable"
    log.warning("database_unavailable", request_id=context.request_id, error=type(exc).__name__)
    message = "The database cannot be reached right now; retry shortly."
    error = ErrorInfo(503, message, "service_unavailable", "database_unavailable")
    return _shaped_response(request, error, {"retry-after": "1"})


_HANDLERS: tuple[tuple[type[Exception], ExceptionHandler], ...] = (
    (GatewayError, _gateway_error),
    (RequestValidationError, _validation_error),
    (HTTPException, _http_error),
    *((error_class, _database_error) for error_class in DATABASE_ERRORS),
    (Exception, _unexpected_error),
)


def install_error_handlers(app: FastAPI) -> None:
    for error_class, handler in _HANDLERS:
        app.add_exception_handler(error_class, handler)


async def handle_error(request: Request, exc: Exception) -> Response:
    """The response FastAPI's handlers give ``exc``, for routes served outside its router."""
    for error_class, handler in _HANDLERS:
        if isinstance(exc, error_class):
            return await handler(request, exc)
    raise AssertionError("unreachable: the last handler takes every Exception")
