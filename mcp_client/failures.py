"""One-line reasons for logs, /readyz and error results, chosen by exception type and status."""

from __future__ import annotations

import httpx2
from mcp.client.auth import OAuthFlowError
from mcp.shared.exceptions import MCPError

from mcp_client.backend import BackendUnavailable
from mcp_client.http_watch import describe_refusal, refusal_of
from mcp_client.oauth import describe_oauth_failure


def describe_failure(exc: BaseException | None) -> str:
    """The innermost cause of a (task-group) failure, readable by an operator."""
    if exc is None:
        return "the connection closed"
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, httpx2.HTTPStatusError):  # e.g. the SSE transport's GET refused
        return _describe_status(exc.response)
    if isinstance(exc, OAuthFlowError):
        return describe_oauth_failure(exc)
    if isinstance(exc, MCPError):
        return f"protocol error: {exc.error.message}"
    if isinstance(exc, BackendUnavailable):
        return str(exc)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _describe_status(response: httpx2.Response) -> str:
    refusal = refusal_of(response.request.method, response.status_code, had_session=False)
    if refusal is not None:
        return describe_refusal(refusal)
    return f"the server answered HTTP {response.status_code}"
