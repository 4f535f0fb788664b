"""Errors at the HTTP boundary: every failure becomes a JSON error body, by type.

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

from gateway.context import request_context
from gateway.responses import json_response
from llm_service.errors import GatewayError

log = structlog.get_logger("gateway.errors")
ExceptionHandler = Callable[[Request, Exception], Awaitable[Response]]


class AuthenticationFailed(GatewayError):
    status_code = 401
    error_type = "invalid_request_error"
    code = "invalid_api_key"


class PermissionDenied(GatewayError):
    status_code = 403
    error_type = "permission_error"
    code = "permission_denied"


def error_body(
    message: str, error_type: str, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": param, "code": code}}


def gateway_error_body(exc: GatewayError) -> dict[str, Any]:
    return error_body(exc.message, exc.error_type, exc.code, exc.param)


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
    return route.error_body(error) if isinstance(route, ErrorShapedRoute) else _openai_body(error)


def _shaped_response(
    request: Request, error: ErrorInfo, headers: dict[str, str] | None = None
) -> Response:
    return json_response(shaped_error_body(request.scope, error), error.status, headers)


async def _gateway_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, GatewayError)
    request_context(request).fail(exc)
    headers: dict[str, str] = {}
    retry_after = getattr(exc, "retry_after", None)
    if retry_after is not None:
        headers["retry-after"] = str(max(1, round(retry_after)))
    if isinstance(exc, AuthenticationFailed):
        headers["www-authenticate"] = "Bearer"
    error = ErrorInfo(exc.status_code, exc.message, exc.error_type, exc.code, exc.param)
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


_HANDLERS: tuple[tuple[type[Exception], ExceptionHandler], ...] = (
    (GatewayError, _gateway_error),
    (RequestValidationError, _validation_error),
    (HTTPException, _http_error),
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
