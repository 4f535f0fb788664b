"""Pure ASGI middleware: request id, one log line per request, usage, body size limit."""

from __future__ import annotations

import re
import secrets
from time import perf_counter

import orjson
import structlog
from opentelemetry.trace import NoOpTracer, Span, Tracer
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from accounts.usage import UsageEntry
from gateway.context import RequestContext
from gateway.errors import ErrorInfo, shaped_error_body
from gateway.metrics import GatewayMetrics
from llm_service.spans import span

log = structlog.get_logger("gateway.access")
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


class RequestContextMiddleware:
    def __init__(
        self, app: ASGIApp, metrics: GatewayMetrics | None = None, tracer: Tracer | None = None
    ) -> None:
        self.app = app
        self.metrics = metrics
        self.tracer = tracer or NoOpTracer()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        context = RequestContext(request_id=_request_id(scope))
        scope.setdefault("state", {})["context"] = context
        status = 500
        streaming = False
        first_event: float | None = None

        async def send_with_id(message: Message) -> None:
            nonlocal status, streaming, first_event
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = list(message.get("headers", []))
                streaming = (b"content-type", b"text/event-stream") in (
                    (name.lower(), value.split(b";")[0]) for name, value in headers
                )
                headers.append((b"x-request-id", context.request_id.encode()))
                message["headers"] = headers
            elif streaming and first_event is None and message.get("body"):
                first_event = perf_counter() - context.started
            await send(message)

        with span(self.tracer, scope["method"]) as current:
            try:
                await self.app(scope, receive, send_with_id)
            finally:
                _finish(scope, context, status)
                _annotate(current, scope, context, status)
                if self.metrics is not None:
                    _observe(self.metrics, scope, context, status, first_event)


def _annotate(span: Span, scope: Scope, context: RequestContext, status: int) -> None:
    if not span.is_recording():
        return
    route = getattr(scope.get("route"), "path", None)
    # Named by route template, not path: conversation ids would make every name unique.
    span.update_name(f"{scope['method']} {route or 'unmatched'}")
    span.set_attribute("http.response.status_code", status)
    span.set_attribute("gateway.request_id", context.request_id)
    if context.model:
        span.set_attribute("gateway.model", context.model)


def _request_id(scope: Scope) -> str:
    for name, value in scope["headers"]:
        if name == b"x-request-id":
            candidate: str = value.decode("latin-1")
            if _REQUEST_ID.match(candidate):
                return candidate
    # 128 random bits as 32 hex digits, like uuid4().hex at a fraction of its cost per request.
    return secrets.token_hex(16)


def _finish(scope: Scope, context: RequestContext, status: int) -> None:
    latency_ms = round((perf_counter() - context.started) * 1000, 2)
    usage = context.usage
    # Error responses at warning: an operator filtering on level sees every refusal and failure.
    emit = log.warning if status >= 400 else log.info
    emit(
        "request",
        request_id=context.request_id,
        method=scope["method"],
        path=scope["path"],
        status=status,
        latency_ms=latency_ms,
        key=context.key_name,
        model=context.model,
        provider=context.provider,
        prompt_tokens=usage.prompt_tokens if usage else None,
        completion_tokens=usage.completion_tokens if usage else None,
        error_type=context.error_type,
    )
    if context.model is None:
        return
    services = getattr(scope["app"].state, "services", None)
    if services is None:
        return
    services.usage.record(
        UsageEntry(
            request_id=context.request_id,
            api_key_id=context.key_id,
            key_name=context.key_name,
            route=scope["path"],
            model=context.model,
            provider=context.provider,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            latency_ms=round(latency_ms),
            status_code=status,
            error_type=context.error_type,
            team=context.team,
            cached_tokens=usage.cached_tokens if usage else 0,
            cache_write_tokens=usage.cache_write_tokens if usage else 0,
            reasoning_tokens=usage.reasoning_tokens if usage else 0,
        )
    )


def _observe(
    metrics: GatewayMetrics,
    scope: Scope,
    context: RequestContext,
    status: int,
    first_event: float | None,
) -> None:
    # The route template (not the raw path) keeps label values bounded.
    route = getattr(scope.get("route"), "path", "unmatched")
    seconds = perf_counter() - context.started
    metrics.observe_request(route, context.model, context.provider, status, seconds)
    if first_event is not None:
        metrics.observe_first_token(route, context.model, context.provider, first_event)
    # Tokens are counted where usage is recorded (UsageRecorder's on_record), not here.
    if context.upstream_error is not None:
        metrics.observe_upstream_error(context.model, context.provider, context.upstream_error)


class BodySizeLimitMiddleware:
    """Refuses bodies over the limit with 413 before the application reads them."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > self.max_bytes:
                await self._refuse(scope, send)
                return
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _BodyTooLarge
            return message

        try:
            await self.app(scope, limited_receive, send)
        except _BodyTooLarge:
            await self._refuse(scope, send)

    async def _refuse(self, scope: Scope, send: Send) -> None:
        message = f"Request body exceeds {self.max_bytes} bytes."
        error = ErrorInfo(413, message, "invalid_request_error", "request_too_large")
        body = orjson.dumps(shaped_error_body(scope, error))
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body})


class _BodyTooLarge(Exception):
    pass
