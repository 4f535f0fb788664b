"""Refuses hostile JSON bodies before any work: 400 or 413, never a 500, never stored.

Checked in order: UTF-8, JSON syntax, nesting depth, NUL characters (PostgreSQL cannot store them
and no model needs them), numbers beyond 64 bits, duplicate object keys (parsers disagree on
which one wins, so the gateway and a provider could read different requests), and the number of
messages. The checked body is handed on unchanged.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.context import RequestContext
from gateway.errors import ErrorInfo, shaped_error_body

_INT_RANGE = range(-(2**63), 2**64)
_NUL_ESCAPE = b"\\u0000"
_GUARDED_METHODS = frozenset({"POST", "PUT", "PATCH"})


class BodyRefused(Exception):
    def __init__(self, status: int, message: str, code: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code


def _bad(message: str, code: str = "invalid_json") -> BodyRefused:
    return BodyRefused(400, message, code)


def check_json_body(body: bytes, *, max_depth: int, max_messages: int) -> None:
    """Raises ``BodyRefused`` naming the first problem with ``body``."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise _bad("The request body is not valid UTF-8.", "invalid_encoding") from None
    try:
        document = orjson.loads(body)  # bounded depth: cannot exhaust the stack
    except orjson.JSONDecodeError:
        raise _bad("The request body is not valid JSON.") from None
    # Every nesting level opens a bracket, so a body with no more brackets than the limit (in
    # strings or not) cannot nest deeper: the common case skips the walk over the document.
    if body.count(b"{") + body.count(b"[") > max_depth:
        _check_depth(document, max_depth)
    # Raw control characters are invalid JSON (the parse above refused them), so the escape is
    # the only way a body can hold a NUL: most bodies need no search for one.
    if _NUL_ESCAPE in body:
        _check_no_nul(document)
    json.loads(
        text, object_pairs_hook=_no_duplicate_keys, parse_int=_bounded_int, parse_constant=_const
    )
    messages = document.get("messages") if isinstance(document, dict) else None
    if isinstance(messages, list) and len(messages) > max_messages:
        raise BodyRefused(
            413, f"The request has more than {max_messages} messages.", "too_many_messages"
        )


def _check_depth(document: Any, max_depth: int) -> None:
    pending: list[tuple[dict[str, Any] | list[Any], int]] = []
    if isinstance(document, dict | list):
        pending.append((document, 1))
    while pending:
        container, depth = pending.pop()
        if depth > max_depth:
            raise _bad(f"The request body nests deeper than {max_depth} levels.", "too_deep")
        items = container.values() if isinstance(container, dict) else container
        pending.extend((item, depth + 1) for item in items if isinstance(item, dict | list))


def _check_no_nul(document: Any) -> None:
    pending: list[Any] = [document]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            pending.extend(value)
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
        elif isinstance(value, str) and "\x00" in value:
            raise _bad("The request body contains a NUL character.", "nul_character")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _bad(f"The request body repeats the key `{key[:100]}`.", "duplicate_key")
        result[key] = value
    return result


def _bounded_int(digits: str) -> int:
    if len(digits) > 21 or int(digits) not in _INT_RANGE:
        raise _bad("The request body holds a number too large for 64 bits.", "number_too_large")
    return int(digits)


def _const(name: str) -> float:
    raise _bad(f"`{name}` is not valid JSON.")


_NUL_PATH = "The request path holds a NUL character (%00)."


class JsonGuardMiddleware:
    def __init__(self, app: ASGIApp, max_depth: int, max_messages: int) -> None:
        self.app = app
        self.max_depth = max_depth
        self.max_messages = max_messages

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if "\x00" in scope["path"]:
            # A NUL (`%00`) in a path parameter reaches no database: PostgreSQL refuses it in
            # text, as a 500 with its own message; it names nothing here either.
            await _refuse(scope, send, BodyRefused(400, _NUL_PATH, "nul_character"))
            return
        if not guards_body(scope):
            await self.app(scope, receive, send)
            return
        body = await _read_body(receive)
        if body:
            try:
                check_json_body(body, max_depth=self.max_depth, max_messages=self.max_messages)
            except BodyRefused as refused:
                await _refuse(scope, send, refused)
                return
        await self.app(scope, _replay(body, receive), send)


def guards_body(scope: Scope) -> bool:
    """Whether this request's body is checked here: writes sent as JSON or without a type.

    A route that parses a body itself must parse no other (``gateway.chat_route.json_body``).
    """
    if scope["method"] not in _GUARDED_METHODS:
        return False
    for name, value in scope["headers"]:
        if name == b"content-type":
            return b"json" in value.lower()
    return True


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body once, then the real channel: a streaming response waits on it for disconnect."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _refuse(scope: Scope, send: Send, refused: BodyRefused) -> None:
    context = scope.get("state", {}).get("context")
    if isinstance(context, RequestContext):
        context.error_type = "invalid_request_error"
    error = ErrorInfo(refused.status, refused.message, "invalid_request_error", refused.code)
    payload = orjson.dumps(shaped_error_body(scope, error))
    await send(
        {
            "type": "http.response.start",
            "status": refused.status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": payload})
