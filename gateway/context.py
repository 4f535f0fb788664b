"""What one request learned about itself, for its log line and its usage record."""

from __future__ import annotations

from dataclasses import dataclass, field
from time import perf_counter

from starlette.requests import Request

from llm_service.errors import GatewayError, UpstreamError
from llm_service.types import Usage


@dataclass
class RequestContext:
    request_id: str
    started: float = field(default_factory=perf_counter)
    key_id: int | None = None
    key_name: str | None = None
    team: str | None = None
    model: str | None = None
    provider: str | None = None
    usage: Usage | None = None
    error_type: str | None = None
    upstream_error: str | None = None  # the typed upstream failure, for metrics

    def fail(self, exc: GatewayError, error_type: str) -> None:
        """``exc`` ended the request, reported to the caller as ``error_type``."""
        self.error_type = error_type
        if isinstance(exc, UpstreamError):
            self.upstream_error = type(exc).__name__


def request_context(request: Request) -> RequestContext:
    context: RequestContext = request.scope["state"]["context"]
    return context
