"""``POST /v1/messages``: the Anthropic Messages API over every model in the registry."""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator

from fastapi import APIRouter, Request
from starlette.responses import Response, StreamingResponse

from gateway import sse
from gateway.anthropic_api.convert import message_json, to_chat_request
from gateway.anthropic_api.errors import AnthropicRoute
from gateway.anthropic_api.schemas import MessagesRequest
from gateway.anthropic_api.stream import anthropic_sse
from gateway.auth import CurrentPrincipal, ServicesDep
from gateway.context import RequestContext, request_context
from gateway.errors import PermissionDenied
from gateway.keys import Principal
from gateway.responses import json_response
from gateway.services import Services
from llm_service.errors import GatewayError, UpstreamProtocolError
from llm_service.registry import role_allows
from llm_service.types import ChatRequest, ChatResponse, StreamDone, StreamEvent

router = APIRouter(prefix="/v1", tags=["anthropic"], route_class=AnthropicRoute)
SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


def _authorize_model(services: Services, principal: Principal, name: str) -> str:
    """The model's provider, once the key is allowed to use it."""
    deployment = services.registry.get(name)
    if not role_allows(deployment.config, principal.roles):
        raise PermissionDenied(f"This API key may not use the model `{name}`.", param="model")
    return deployment.config.provider


# The one place a model is called: a router with retries and fallbacks slots in here.
async def _complete(services: Services, model: str, request: ChatRequest) -> ChatResponse:
    return await services.registry.adapter(model).complete(request)


def _stream(
    services: Services, model: str, request: ChatRequest
) -> AsyncGenerator[StreamEvent, None]:
    return services.registry.adapter(model).stream(request)


@router.post(
    "/messages",
    response_model=None,
    responses=sse.stream_responses("A message, or with `stream: true` Messages API events"),
)
async def create_message(
    body: MessagesRequest,
    request: Request,
    principal: CurrentPrincipal,
    services: ServicesDep,
) -> Response:
    context = request_context(request)
    context.model = body.model
    context.provider = _authorize_model(services, principal, body.model)
    chat_request = to_chat_request(body)
    message_id = f"msg_{uuid.uuid4().hex}"
    if not body.stream:
        response = await _complete(services, body.model, chat_request)
        context.usage = response.usage
        return json_response(message_json(response, message_id, body.model))

    events = _stream(services, body.model, chat_request)
    # Errors before the first event still get a proper status code; after it, an SSE error.
    first = await anext(events, None)
    if first is None:
        raise UpstreamProtocolError("the upstream stream was empty", provider=context.provider)
    return StreamingResponse(
        anthropic_sse(
            first,
            events,
            message_id=message_id,
            model=body.model,
            on_done=lambda done: _record_done(context, done),
            on_error=lambda exc: _record_error(context, exc),
        ),
        media_type="text/event-stream",
        headers=SSE_HEADERS,
    )


def _record_done(context: RequestContext, done: StreamDone) -> None:
    context.usage = done.response.usage


def _record_error(context: RequestContext, exc: GatewayError) -> None:
    context.error_type = exc.error_type
