"""The one flow of a chat request on a hot route: ``/v1/chat/completions`` and ``/v1/messages``.

Key, body, model authorization, limits, the request's context, routing, the whole or streamed
answer and its usage happen here, once; each API supplies only its own parts (``ChatApi``): its
body, the conversion to the canonical request, and the encoding of the answer.

Both routes are served past FastAPI's router (``gateway.hot_routes``, docs/performance.md), so
this reads the key and the body itself: the body is validated by pydantic-core in one pass from
its bytes, where FastAPI's own body handling (content-type parsing, ``json.loads``, validation of
the Python objects, dependency solving) was about a tenth of a streamed request's time to its
first byte. Validation errors take the same path as FastAPI's, so callers see the same 400.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response

from accounts.limits.reservations import Reservation, prompt_tokens_of
from accounts.principals import Principal
from gateway.auth import authenticate, authorize_model
from gateway.context import RequestContext, request_context
from gateway.input_guard import guards_body
from gateway.responses import json_response
from gateway.server_tools import run_server_tools
from gateway.services import Services, get_services
from gateway.sse import EventStreamResponse
from llm_service.config import ModelConfig
from llm_service.errors import GatewayError, InvalidRequest, UpstreamProtocolError
from llm_service.router import Served
from llm_service.types import (
    JSON,
    AssistantMessage,
    ChatRequest,
    ChatResponse,
    StreamDone,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    Usage,
)

Delta = TextDelta | ThinkingDelta | ToolCallDelta


class ChatBody(Protocol):
    """What the flow reads of any API's request body."""

    @property
    def model(self) -> str: ...

    @property
    def stream(self) -> bool: ...


Body = TypeVar("Body", bound=ChatBody)
Parsed = TypeVar("Parsed")


class StreamEncoder(Protocol):
    """One streamed answer in an API's server-sent events (framed by ``gateway.sse.frame``)."""

    def start(self) -> bytes: ...

    def delta(self, event: Delta) -> bytes: ...

    def done(self, response: ChatResponse) -> bytes:
        """The end of the answer: its finish, usage, and the API's closing events."""
        ...

    def error(self, exc: GatewayError) -> bytes:
        """The event that ends a stream which failed after it started."""
        ...

    def error_type(self, exc: GatewayError) -> str:
        """The type ``error`` names, which the request's log line repeats."""
        ...

    def cut(self) -> bytes:
        """The event that ends a stream whose upstream stopped without its final event."""
        ...


@dataclass(frozen=True, slots=True)
class ChatApi(Generic[Body]):
    """An API's own parts of the flow; one instance per API, built at import."""

    parse: Callable[[bytes], Body]  # the body model's ``model_validate_json``
    to_chat_request: Callable[[Body], ChatRequest]
    new_reply_id: Callable[[], str]
    whole: Callable[[ChatResponse, str, str], JSON]  # (answer, reply id, model) -> JSON body
    encoder: Callable[[str, Body], StreamEncoder]  # (reply id, body)


async def serve_chat(request: Request, api: ChatApi[Body]) -> Response:
    services = await get_services(request)
    principal = await authenticate(request, services)
    body = await json_body(request, api.parse)
    model = body.model
    context = request_context(request)
    context.model = model
    config = authorize_model(services, principal, model)
    require_chat_model(config)
    context.provider = config.provider  # until a deployment answers
    chat_request = services.prompt_guard.screen(principal, api.to_chat_request(body))
    reply_id = api.new_reply_id()
    if config.server_tools:
        # Each model call of the tool loop reserves its own spend (a conversation turn's gate).
        await services.limits.admit(principal)
        return await server_tools_answer(services, principal, body, chat_request, reply_id, api=api)
    reservation = await reserve_spend(
        services, principal, request, model, chat_request.params.max_tokens
    )
    try:
        if not body.stream:
            response, served = await services.router.complete(model, chat_request)
            context.provider = served.provider
            context.usage = response.usage
            await services.limits.settle(reservation, response.usage, served.alias)
            response = services.prompt_guard.screen_answer(principal, response)
            whole = api.whole(response, reply_id, model)
            return json_response(whole, headers=served_headers(served))

        # Errors before the first event still get a proper status code; after it, an SSE error.
        routed = await services.router.stream(model, chat_request)
    except BaseException:
        await services.limits.settle(reservation, None)  # never answered: it costs nothing
        raise
    context.provider = routed.served.provider
    answer = services.prompt_guard.observed(principal, routed.first, routed.rest)
    first = await anext(answer)  # the same first event, already here
    events = event_stream(first, answer, api.encoder(reply_id, body), context)
    return EventStreamResponse(
        services.limits.settle_after(events, reservation, routed.served.alias, context),
        headers=served_headers(routed.served),
    )


async def reserve_spend(
    services: Services,
    principal: Principal,
    request: Request,
    alias: str,
    max_tokens: int | None,
) -> Reservation:
    """The request's worst-case cost held on its budgets (``KeyLimiter.reserve``), its prompt
    estimated from the size of its body."""
    size = len(await request.body())  # read already: the body is cached on the request
    return await services.limits.reserve(
        principal, alias, max_tokens=max_tokens, prompt_tokens=prompt_tokens_of(size)
    )


async def server_tools_answer(
    services: Services,
    principal: Principal,
    body: Body,
    chat_request: ChatRequest,
    reply_id: str,
    *,
    api: ChatApi[Body],
) -> Response:
    """A ``server_tools`` model: the gateway runs the tool loop; the caller gets its final
    answer in the API's own shape, whole or as a stream."""
    outcome = await run_server_tools(services, principal, body.model, chat_request)
    answer = ChatResponse(AssistantMessage(content=outcome.content), "stop", Usage(), body.model)
    headers = {"x-gateway-conversation-id": outcome.conversation_id}
    if not body.stream:
        return json_response(api.whole(answer, reply_id, body.model), headers=headers)
    return EventStreamResponse(replayed(api.encoder(reply_id, body), answer), headers=headers)


async def event_stream(
    first: StreamEvent,
    rest: AsyncGenerator[StreamEvent, None],
    encoder: StreamEncoder,
    context: RequestContext,
) -> AsyncIterator[bytes]:
    """The streamed answer's body; the usage (or the failure) lands in ``context``.

    A failure after the first byte ends the stream with the API's error event.
    """
    # The opening goes out with the first event, which is already here: one write, not two.
    opening = encoder.start()
    event: StreamEvent | None = first
    try:
        while event is not None:
            if isinstance(event, StreamDone):
                context.usage = event.response.usage
                yield opening + encoder.done(event.response)
                return
            yield opening + encoder.delta(event)
            opening = b""
            event = await anext(rest, None)
    except GatewayError as exc:
        context.fail(exc, encoder.error_type(exc))  # what the caller's error event says
        yield encoder.error(exc)
        return
    finally:
        await rest.aclose()
    # The upstream ended without its final event: say so rather than close silently, and count
    # it as the upstream failure it is.
    cut = UpstreamProtocolError("The upstream stream ended unexpectedly.")
    context.fail(cut, encoder.error_type(cut))
    yield encoder.cut()


async def replayed(encoder: StreamEncoder, answer: ChatResponse) -> AsyncIterator[bytes]:
    """A complete answer as the stream a caller asked for: one text delta, then its end."""
    yield encoder.start()
    yield encoder.delta(TextDelta(answer.message.content or ""))
    yield encoder.done(answer)


def served_headers(served: Served) -> dict[str, str]:
    """Who answered, after load balancing and any fallback."""
    return {
        "x-gateway-model": served.alias,
        "x-gateway-deployment": served.deployment,
        "x-gateway-provider": served.provider,
    }


def require_chat_model(config: ModelConfig) -> None:
    """An embedding model (``kind: embedding``) cannot answer a conversation."""
    if config.kind != "chat":
        raise InvalidRequest(
            f"The model `{config.name}` is an embedding model; call it on /v1/embeddings.",
            param="model",
        )


async def json_body(request: Request, parse: Callable[[bytes], Parsed]) -> Parsed:
    # Only bodies the JSON guard has checked (duplicate keys, depth, NUL, huge numbers) are read.
    if not guards_body(request.scope):
        raise InvalidRequest(
            "Send the request body as JSON, with `Content-Type: application/json`."
        )
    try:
        return parse(await request.body())
    except ValidationError as exc:
        raise RequestValidationError(exc.errors(include_url=False)) from None
