"""The Anthropic error body, so the ``anthropic`` SDK raises its typed exceptions.

The SDK picks the exception class by HTTP status; the body's ``error.type`` follows the status as
Anthropic documents it (``overloaded_error`` for an overloaded upstream, whatever its status).
"""

from __future__ import annotations

from typing import Any

from gateway.errors import REPORTS, ErrorInfo, ErrorShapedRoute, report_of
from llm_service.errors import GatewayError, UpstreamOverloaded

_TYPES_BY_STATUS = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def anthropic_error_type(status: int, code: str | None = None) -> str:
    if code == REPORTS[UpstreamOverloaded].code:
        return "overloaded_error"
    default = "api_error" if status >= 500 else "invalid_request_error"
    return _TYPES_BY_STATUS.get(status, default)


def anthropic_error_body(error_type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}}


def gateway_error_body(exc: GatewayError) -> dict[str, Any]:
    report = report_of(exc)
    return anthropic_error_body(anthropic_error_type(report.status, report.code), exc.message)


class AnthropicRoute(ErrorShapedRoute):
    def error_body(self, error: ErrorInfo) -> dict[str, Any]:
        return anthropic_error_body(anthropic_error_type(error.status, error.code), error.message)
