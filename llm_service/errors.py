"""Typed errors. Adapters raise these; the HTTP edge maps them to status codes by type."""

from __future__ import annotations


class GatewayError(Exception):
    """Base of every error the gateway reports to a caller.

    ``error_type`` and ``code`` follow the OpenAI error body so SDKs raise their usual exceptions.
    """

    status_code: int = 500
    error_type: str = "api_error"
    code: str | None = None
    # Seconds the caller should wait before trying again (sent as ``Retry-After``), when known.
    retry_after: float | None = None

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


class InvalidRequest(GatewayError):
    status_code = 400
    error_type = "invalid_request_error"


class ModelNotFound(GatewayError):
    status_code = 404
    error_type = "invalid_request_error"
    code = "model_not_found"


class InternalError(GatewayError):
    """The gateway's own code failed while calling a model (an adapter's included): a bug to
    fix, reported as a 500 and never counted against the deployment's health."""

    code = "internal_error"


class ModelUnavailable(GatewayError):
    status_code = 503
    error_type = "service_unavailable"
    code = "model_unavailable"


class UpstreamError(GatewayError):
    """The provider failed or refused. ``retryable`` tells the router whether to try again."""

    status_code = 502
    error_type = "upstream_error"
    retryable = False

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        upstream_status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.upstream_status = upstream_status
        self.retry_after = retry_after


class UpstreamAuthError(UpstreamError):
    """The gateway's own provider credentials were refused: the operator's problem."""

    code = "upstream_auth_failed"


class UpstreamBadRequest(UpstreamError):
    status_code = 400
    error_type = "invalid_request_error"
    code = "upstream_rejected_request"


class ContextWindowExceeded(UpstreamBadRequest):
    code = "context_length_exceeded"


class UpstreamRateLimited(UpstreamError):
    status_code = 429
    error_type = "rate_limit_error"
    code = "upstream_rate_limited"
    retryable = True


class UpstreamQuotaExceeded(UpstreamError):
    """Spend limit or quota: retrying cannot help until someone pays or raises the limit."""

    status_code = 429
    error_type = "insufficient_quota"
    code = "upstream_quota_exceeded"


class UpstreamOverloaded(UpstreamError):
    status_code = 503
    error_type = "service_unavailable"
    code = "upstream_overloaded"
    retryable = True


class UpstreamServerError(UpstreamError):
    code = "upstream_server_error"
    retryable = True


class UpstreamConnectionError(UpstreamError):
    code = "upstream_unreachable"
    retryable = True


class UpstreamTimeout(UpstreamError):
    status_code = 504
    error_type = "timeout"
    code = "upstream_timeout"
    retryable = True


class UpstreamProtocolError(UpstreamError):
    """The provider answered with something that is not its documented wire format."""

    code = "upstream_malformed_response"


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds form); None when absent or a date."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return max(seconds, 0.0)


_QUOTA_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached", "quota_exceeded"})


def error_for_status(
    status: int,
    message: str,
    *,
    provider: str,
    retry_after: float | None = None,
    code: str | None = None,
) -> UpstreamError:
    """Map an upstream HTTP status (and the provider's structured error code) to a typed error."""
    error_class = _error_class(status, code)
    return error_class(
        f"{provider} answered {status}: {message}",
        provider=provider,
        upstream_status=status,
        retry_after=retry_after,
    )


def _error_class(status: int, code: str | None) -> type[UpstreamError]:  # noqa: PLR0911
    if status in (401, 403):
        return UpstreamAuthError
    if status == 408:
        return UpstreamTimeout
    if status == 429:
        return UpstreamQuotaExceeded if code in _QUOTA_CODES else UpstreamRateLimited
    if status in (503, 529):
        return UpstreamOverloaded
    if status >= 500:
        return UpstreamServerError
    if code == "context_length_exceeded":
        return ContextWindowExceeded
    if 400 <= status < 500:
        return UpstreamBadRequest
    return UpstreamError
