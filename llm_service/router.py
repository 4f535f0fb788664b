"""The one way a model is called: retries, deadlines, load balancing and fallbacks.

A request names an alias. The router tries that alias's deployments (at most ``retry.max_attempts``
calls, retryable errors only, jittered backoff), then its ``fallbacks`` in order; a prompt too long
for the model goes to ``context_window_fallbacks`` instead. The same canonical request is sent to
every candidate, so tools and tool history survive a switch to another provider. A stream is
retried only until its first event: after that the caller has bytes and the router steps aside.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import structlog
from opentelemetry.trace import NoOpTracer, Span, Tracer

from llm_service.balancer import Balancer, Upstream
from llm_service.errors import (
    ContextWindowExceeded,
    GatewayError,
    InvalidRequest,
    ModelUnavailable,
    UpstreamBadRequest,
    UpstreamError,
    UpstreamProtocolError,
    UpstreamTimeout,
)
from llm_service.registry import ModelRegistry
from llm_service.retry import Timing, backoff_seconds, is_retryable
from llm_service.spans import span
from llm_service.stream_guard import E, guarded_stream, internal_error
from llm_service.types import (
    ChatRequest,
    ChatResponse,
    EmbeddingAdapter,
    EmbeddingRequest,
    EmbeddingResponse,
    ResponsesAdapter,
    ResponsesAnswer,
    ResponsesCall,
    ResponsesDone,
    ResponsesStreamEvent,
    StreamDone,
    StreamEvent,
)

log = structlog.get_logger("llm_service.router")
T = TypeVar("T")
Attempt = Callable[[Upstream, float], Awaitable[T]]


@dataclass(frozen=True, slots=True)
class Served:
    """Who answered: the alias (after any fallback), its deployment and provider."""

    alias: str
    deployment: str
    provider: str


@dataclass
class Routed(Generic[E]):
    first: E
    rest: AsyncGenerator[E, None]
    served: Served


RoutedStream = Routed[StreamEvent]
RoutedResponses = Routed[ResponsesStreamEvent]


def _served(upstream: Upstream) -> Served:
    return Served(upstream.alias, upstream.deployment.id, upstream.deployment.config.provider)


def counts_against_health(error: GatewayError) -> bool:
    """A refused request says nothing about the deployment; everything else upstream does."""
    return isinstance(error, UpstreamError) and not isinstance(error, UpstreamBadRequest)


def _annotate(span: Span, served: Served) -> None:
    span.set_attribute("gateway.model", served.alias)
    span.set_attribute("gateway.provider", served.provider)


class Router:
    def __init__(
        self, registry: ModelRegistry, timing: Timing | None = None, tracer: Tracer | None = None
    ) -> None:
        self._tracer = tracer or NoOpTracer()
        self._registry = registry
        self._timing = timing or Timing()
        self.balancer = Balancer(registry, self._timing)

    async def complete(self, alias: str, request: ChatRequest) -> tuple[ChatResponse, Served]:
        async def attempt(upstream: Upstream, deadline: float) -> tuple[ChatResponse, Served]:
            adapter = upstream.deployment.adapter
            assert adapter is not None  # the balancer hands out available deployments only
            response = await self._whole(upstream, deadline, adapter.complete(request))
            return response, _served(upstream)

        with span(self._tracer, f"chat {alias}") as current:
            response, served = await self._route(alias, attempt)
            _annotate(current, served)
            return response, served

    async def embed(
        self, alias: str, request: EmbeddingRequest
    ) -> tuple[EmbeddingResponse, Served]:
        """Embeddings, with the same retries, deadlines, balancing and fallbacks as chat."""

        async def attempt(upstream: Upstream, deadline: float) -> tuple[EmbeddingResponse, Served]:
            adapter = upstream.deployment.adapter
            if not isinstance(adapter, EmbeddingAdapter):
                provider = upstream.deployment.config.provider
                raise InvalidRequest(f"The provider `{provider}` cannot serve embeddings.")
            response = await self._whole(upstream, deadline, adapter.embed(request))
            return response, _served(upstream)

        with span(self._tracer, f"embeddings {alias}") as current:
            response, served = await self._route(alias, attempt)
            _annotate(current, served)
            return response, served

    async def _whole(self, upstream: Upstream, deadline: float, call: Awaitable[T]) -> T:
        """One whole (not streamed) upstream call within the deadline, told to the breaker."""
        upstream.begin()
        try:
            async with asyncio.timeout(self._remaining(deadline)):
                result = await call
        except Exception as exc:
            error = _as_gateway_error(exc, upstream)
            self._record(upstream, error)
            raise error from exc
        except BaseException:
            upstream.breaker.release()
            raise
        finally:
            upstream.end()
        upstream.breaker.record_success()
        return result

    async def stream(self, alias: str, request: ChatRequest) -> RoutedStream:
        def open_stream(upstream: Upstream) -> AsyncGenerator[StreamEvent, None]:
            adapter = upstream.deployment.adapter
            assert adapter is not None  # the balancer hands out available deployments only
            return adapter.stream(request)

        return await self._streamed(alias, f"chat {alias} (stream)", open_stream)

    def serves_responses(self, alias: str) -> bool:
        """Whether every deployment that may answer for ``alias`` (its fallbacks' too) serves the
        Responses API itself: only then is such a request passed through, so no fallback ever
        needs a translation the first attempt did not make."""
        config = self._registry.get(alias).config
        names = [alias, *config.fallbacks, *config.context_window_fallbacks]
        adapters = [d.adapter for name in names for d in self._registry.members(name)]
        present = [adapter for adapter in adapters if adapter is not None]
        return bool(present) and all(isinstance(a, ResponsesAdapter) for a in present)

    async def respond(self, alias: str, call: ResponsesCall) -> tuple[ResponsesAnswer, Served]:
        """A provider's own Responses API, whole, with the chat path's retries and fallbacks."""

        async def attempt(upstream: Upstream, deadline: float) -> tuple[ResponsesAnswer, Served]:
            adapter = _responses_adapter(upstream)
            answer = await self._whole(upstream, deadline, adapter.respond(call))
            return answer, _served(upstream)

        with span(self._tracer, f"responses {alias}") as current:
            answer, served = await self._route(alias, attempt)
            _annotate(current, served)
            return answer, served

    async def respond_stream(self, alias: str, call: ResponsesCall) -> RoutedResponses:
        def open_stream(upstream: Upstream) -> AsyncGenerator[ResponsesStreamEvent, None]:
            return _responses_adapter(upstream).respond_stream(call)

        return await self._streamed(alias, f"responses {alias} (stream)", open_stream)

    async def _streamed(
        self, alias: str, name: str, open_stream: Callable[[Upstream], AsyncGenerator[E, None]]
    ) -> Routed[E]:
        async def attempt(upstream: Upstream, deadline: float) -> Routed[E]:
            timeouts = upstream.deployment.config.timeouts
            events = open_stream(upstream)
            upstream.begin()
            try:
                async with asyncio.timeout(min(timeouts.first_byte, self._remaining(deadline))):
                    first = await anext(events)
            except Exception as exc:
                upstream.end()
                await events.aclose()
                error = _as_gateway_error(exc, upstream)
                self._record(upstream, error)
                raise error from exc
            except BaseException:
                upstream.end()
                upstream.breaker.release()
                await events.aclose()
                raise
            if isinstance(first, (StreamDone, ResponsesDone)):  # a complete answer in one event
                upstream.end()
                upstream.breaker.record_success()
                await events.aclose()
                return Routed(first, _nothing(), _served(upstream))
            rest = await guarded_stream(
                events,
                upstream,
                between_chunks=timeouts.between_chunks,
                remaining=lambda: self._remaining(deadline),
                record=self._record,
            )
            return Routed(first, rest, _served(upstream))

        # The span ends at the first event: what the router decides (and retries) happens by then.
        with span(self._tracer, name) as current:
            routed = await self._route(alias, attempt)
            _annotate(current, routed.served)
            return routed

    def _remaining(self, deadline: float) -> float:
        return max(deadline - self._timing.clock(), 0.0)

    @staticmethod
    def _record(upstream: Upstream, error: GatewayError | None) -> None:
        if error is None:
            upstream.breaker.record_success()
        elif counts_against_health(error):
            was_open = upstream.breaker.opened_at is not None
            upstream.breaker.record_failure()
            if not was_open and upstream.breaker.opened_at is not None:
                log.warning(
                    "deployment_out_of_rotation",
                    alias=upstream.alias,
                    deployment=upstream.deployment.id,
                    cooldown_seconds=upstream.breaker.config.cooldown_seconds,
                    error=type(error).__name__,
                )
        else:
            upstream.breaker.release()

    async def _route(self, alias: str, attempt: Attempt[T]) -> T:
        config = self._registry.get(alias).config
        deadline = self._timing.clock() + config.timeouts.total
        candidates = deque(a for a in config.fallbacks if a != alias)
        tried = {alias}
        current = alias
        while True:
            try:
                return await self._attempts(current, attempt, deadline)
            except ContextWindowExceeded as exc:
                error: GatewayError = exc
                candidates = deque(config.context_window_fallbacks)
            except UpstreamBadRequest:
                raise
            except (UpstreamError, ModelUnavailable) as exc:
                error = exc
            candidates = deque(a for a in candidates if a not in tried)
            if not candidates or self._remaining(deadline) <= 0:
                raise error
            log.warning(
                "model_fallback", failed=current, to=candidates[0], error=type(error).__name__
            )
            current = candidates.popleft()
            tried.add(current)

    async def _attempts(self, alias: str, attempt: Attempt[T], deadline: float) -> T:
        policy = self._registry.get(alias).config.retry
        used: set[str] = set()
        upstream = self.balancer.pick(alias)
        for number in range(1, policy.max_attempts + 1):
            used.add(upstream.deployment.id)
            try:
                return await attempt(upstream, deadline)
            except GatewayError as exc:
                if not is_retryable(exc) or number == policy.max_attempts:
                    raise
                delay = backoff_seconds(number, policy, exc, self._timing.random)
                # A wait longer than the policy allows is better spent on a fallback, or handed
                # to the caller as Retry-After, than holding its connection open.
                if delay > policy.backoff_max or delay >= self._remaining(deadline):
                    raise
                log.info(
                    "model_retry",
                    alias=alias,
                    deployment=upstream.deployment.id,
                    attempt=number,
                    error=type(exc).__name__,
                    wait_seconds=round(delay, 3),
                )
                await self._timing.sleep(delay)
                upstream = self._next(alias, used, exc)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _next(self, alias: str, used: set[str], error: GatewayError) -> Upstream:
        """Another deployment if there is one; when all are now cooling down, the last error."""
        try:
            return self.balancer.pick(alias, avoid=used)
        except ModelUnavailable:
            raise error from None


async def _nothing() -> AsyncGenerator[Any, None]:
    return
    yield  # pragma: no cover - makes this an (empty) async generator


def _responses_adapter(upstream: Upstream) -> ResponsesAdapter:
    adapter = upstream.deployment.adapter
    if not isinstance(adapter, ResponsesAdapter):  # serves_responses said it would be
        provider = upstream.deployment.config.provider
        raise InvalidRequest(f"The provider `{provider}` does not serve the Responses API itself.")
    return adapter


def _as_gateway_error(exc: Exception, upstream: Upstream) -> GatewayError:
    provider = upstream.deployment.config.provider
    if isinstance(exc, GatewayError):
        return exc
    if isinstance(exc, TimeoutError):  # the router's own deadline
        return UpstreamTimeout(f"{provider} did not answer in time", provider=provider)
    if isinstance(exc, StopAsyncIteration):
        return UpstreamProtocolError(f"{provider} sent an empty stream", provider=provider)
    return internal_error(exc, upstream)
