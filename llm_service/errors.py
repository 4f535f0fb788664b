"""The model layer's errors, one tree. Adapters raise them; the router retries by them; the HTTP
edge reports them by type (``gateway/errors.py`` holds the one table of statuses and wire codes,
so nothing here knows HTTP).

    GatewayError                    the base of every error reported to a caller
    ├── InvalidRequest              the request cannot be served as asked (``param`` names why)
    ├── ModelNotFound               no model of that name
    ├── InternalError               the gateway's own code failed (a bug)
    ├── ModelUnavailable            the model cannot be reached now (``reason``: the operator's)
    └── UpstreamError               the provider failed or refused (``retryable``: try again?)
        ├── UpstreamAuthError       the gateway's own provider credentials were refused
        ├── UpstreamBadRequest      the provider refused the request as invalid
        │   └── ContextWindowExceeded
        ├── UpstreamRateLimited     retryable
        ├── UpstreamQuotaExceeded   spend limit or quota: not retryable
        ├── UpstreamOverloaded      retryable
        ├── UpstreamServerError     retryable
        ├── UpstreamConnectionError retryable
        ├── UpstreamTimeout         retryable
        └── UpstreamProtocolError   not the provider's documented wire format

The other layers' trees (chat_service, accounts, governance, tool_servers, gateway) grow from
``GatewayError`` in their own ``errors`` module.
"""

from __future__ import annotations


class GatewayError(Exception):
    """Base of every error the gateway reports to a caller: a message for the caller, the
    request field it concerns (``param``), and, when known, how long to wait before trying again
    (``retry_after``, seconds)."""

    retry_after: float | None = None

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


class InvalidRequest(GatewayError):
    pass


class ModelNotFound(GatewayError):
    pass


class InternalError(GatewayError):
    """The gateway's own code failed while calling a model (an adapter's included): a bug to
    fix, reported as a 500 and never counted against the deployment's health."""


class ModelUnavailable(GatewayError):
    """The caller is told only that the model is unavailable; ``reason`` (an unset key variable,
    an unreachable server) is the operator's, for the log and ``/readyz``."""

    def __init__(self, model: str, reason: str) -> None:
        super().__init__(f"The model `{model}` is unavailable; try again later or another model.")
        self.model = model
        self.reason = reason


class UpstreamError(GatewayError):
    """The provider failed or refused. ``retryable`` tells the router whether to try again."""

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


class UpstreamBadRequest(UpstreamError):
    pass


class ContextWindowExceeded(UpstreamBadRequest):
    pass


class UpstreamRateLimited(UpstreamError):
    retryable = True


class UpstreamQuotaExceeded(UpstreamError):
    """Spend limit or quota: retrying cannot help until someone pays or raises the limit."""


class UpstreamOverloaded(UpstreamError):
    retryable = True


class UpstreamServerError(UpstreamError):
    retryable = True


class UpstreamConnectionError(UpstreamError):
    retryable = True


class UpstreamTimeout(UpstreamError):
    retryable = True


class UpstreamProtocolError(UpstreamError):
    """The provider answered with something that is not its documented wire format."""


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
