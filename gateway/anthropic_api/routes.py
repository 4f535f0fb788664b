"""``POST /v1/messages``: the Anthropic Messages API over every model in the registry."""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Request
from starlette.responses import Response

from gateway import sse
from gateway.anthropic_api.convert import message_json, to_chat_request
from gateway.anthropic_api.errors import AnthropicRoute, anthropic_error_type
from gateway.anthropic_api.schemas import MessagesRequest
from gateway.anthropic_api.stream import anthropic_sse
from gateway.auth import authenticate, authorize_model
from gateway.context import RequestContext, request_context
from gateway.event_stream import EventStreamResponse
from gateway.json_body import json_body
from gateway.responses import json_response
from gateway.served import served_headers
from gateway.services import get_services
from llm_service.errors import GatewayError
from llm_service.types import StreamDone

router = APIRouter(prefix="/v1", tags=["anthropic"], route_class=AnthropicRoute)


async def create_message(request: Request) -> Response:
    """``POST /v1/messages``, served as a hot route (``gateway.hot_routes``), like the OpenAI
    chat completions: it reads its key and body itself."""
    services = await get_services(request)
    principal = await authenticate(request, services)
    body = await json_body(request, MessagesRequest)
    context = request_context(request)
    context.model = body.model
    context.provider = authorize_model(services, principal, body.model).provider
    await services.limits.admit(principal)
    chat_request = to_chat_request(body)
    message_id = f"msg_{uuid.uuid4().hex}"
    if not body.stream:
        response, served = await services.router.complete(body.model, chat_request)
        context.provider = served.provider
        context.usage = response.usage
        await services.limits.charge(principal, served.alias, response.usage)
        reply = json_response(message_json(response, message_id, body.model))
        reply.headers.update(served_headers(served))
        return reply

    # Errors before the first event still get a proper status code; after it, an SSE error.
    routed = await services.router.stream(body.model, chat_request)
    context.provider = routed.served.provider
    events = anthropic_sse(
        routed.first,
        routed.rest,
        message_id=message_id,
        model=body.model,
        on_done=lambda done: _record_done(context, done),
        on_error=lambda exc: _record_error(context, exc),
    )
    return EventStreamResponse(
        services.limits.charge_after(events, principal, routed.served.alias, context),
        headers=served_headers(routed.served),
    )


@router.post(
    "/messages",
    name="create_message",
    response_model=None,
    responses=sse.stream_responses("A message, or with `stream: true` Messages API events"),
)
async def create_message_declared(body: MessagesRequest) -> Response:
    """Declares the route, its body and its error shape; ``create_message`` serves every request."""
    raise AssertionError("POST /v1/messages is a hot route: create_message serves it")


HOT_ROUTES = {("POST", "/v1/messages"): create_message}


def _record_done(context: RequestContext, done: StreamDone) -> None:
    context.usage = done.response.usage


def _record_error(context: RequestContext, exc: GatewayError) -> None:
    context.fail(exc)
    context.error_type = anthropic_error_type(exc.status_code, exc.code)  # what the SSE says
