"""What the HTTP layer saw that the SDK's errors no longer say: how the server refused a request.

The SDK's streamable HTTP transport turns a refused POST into a JSON-RPC error and drops the
status. The status is what tells a stale session (404, or 400 before any result) from a rejected
token (401) or a missing scope (403), so an httpx2 response hook records it here, by the progress
token the catalog gives every call (``params._meta.progressToken``), before the SDK reads the body.
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any, Literal

import httpx2

Refusal = Literal["session", "unauthorized", "forbidden", "not_found"]
SESSION_HEADER = "mcp-session-id"

_DESCRIPTIONS: dict[Refusal, str] = {
    "session": "the server no longer knows this session",
    "unauthorized": "authentication required / token rejected (HTTP 401)",
    "forbidden": "access denied: the credentials lack a required permission (HTTP 403)",
    "not_found": "no MCP endpoint at this URL (HTTP 404)",
}


def describe_refusal(refusal: Refusal) -> str:
    return _DESCRIPTIONS[refusal]


def refusal_of(method: str, status: int, had_session: bool) -> Refusal | None:
    """How the server refused a request, from its method, status and whether it named a session.

    A session id answered 404, or a POST answered 400 (the whole response: no JSON-RPC result
    came), means the session is gone and the request was never executed.
    """
    if status == HTTPStatus.UNAUTHORIZED:
        return "unauthorized"
    if status == HTTPStatus.FORBIDDEN:
        return "forbidden"
    if had_session and (
        status == HTTPStatus.NOT_FOUND or (status == HTTPStatus.BAD_REQUEST and method == "POST")
    ):
        return "session"
    if status == HTTPStatus.NOT_FOUND:
        return "not_found"
    return None


class HTTPWatch:
    """One connection's record of refused requests; a fresh one per session."""

    def __init__(self) -> None:
        self._endpoint: httpx2.URL | None = None
        self._by_token: dict[str, Refusal] = {}
        self.last: Refusal | None = None  # the latest refusal on this connection, any request

    async def on_response(self, response: httpx2.Response) -> None:
        request = response.request
        if self._endpoint is not None and request.url.copy_with(query=None) != self._endpoint:
            return  # e.g. OAuth discovery: its 404s say nothing about the MCP endpoint
        refusal = refusal_of(
            request.method, response.status_code, SESSION_HEADER in request.headers
        )
        if refusal is None:
            return
        self.last = refusal
        token = _progress_token(request)
        if token is not None:
            self._by_token[token] = refusal

    def refusal(self, token: str) -> Refusal | None:
        """How the request carrying ``token`` was refused, if it was; forgets it."""
        return self._by_token.pop(token, None)

    def forget(self, token: str) -> None:
        self._by_token.pop(token, None)

    def event_hooks(self, endpoint: str) -> dict[str, list[Any]]:
        """Hooks for an httpx2 client whose MCP requests go to ``endpoint``."""
        self._endpoint = httpx2.URL(endpoint).copy_with(query=None)
        return {"response": [self.on_response]}


def _progress_token(request: httpx2.Request) -> str | None:
    if request.method != "POST":
        return None
    try:
        body = json.loads(request.content)
    except (httpx2.RequestNotRead, ValueError):
        return None
    params = body.get("params") if isinstance(body, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    return token if isinstance(token, str) else None
