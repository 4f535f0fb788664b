"""``/v1/chat/completions`` and ``/v1/models``: the OpenAI-compatible surface."""

from __future__ import annotations

import secrets
from collections.abc import AsyncGenerator
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from gateway import sse
from gateway.auth import CurrentPrincipal, ServicesDep, authenticate, authorize_model
from gateway.context import RequestContext, request_context
from gateway.event_stream import EventStreamResponse
from gateway.json_body import json_body
from gateway.keys import Principal
from gateway.openai_api.convert import completion_json, to_chat_request
from gateway.openai_api.schemas import ChatCompletionRequest
from gateway.openai_api.server_tools import run_server_tools
from gateway.openai_api.stream import ChunkWriter, openai_sse
from gateway.responses import json_response
from gateway.served import served_headers
from gateway.services import Services, get_services
from llm_service.errors import GatewayError, ModelNotFound
from llm_service.registry import role_allows
from llm_service.types import (
    AssistantMessage,
    ChatRequest,
    ChatResponse,
    StreamDone,
    StreamEvent,
    TextDelta,
    Usage,
)

router = APIRouter(prefix="/v1", tags=["openai"])
CHAT_RESPONSES = sse.stream_responses(
    "A chat.completion, or with `stream: true` chat.completion.chunk events"
)


async def chat_completions(request: Request) -> Response:
    """``POST /v1/chat/completions``, served as a hot route (``gateway.hot_routes``): it reads its
    key and body itself, without FastAPI's dependency solving and body parsing."""
    services = await get_services(request)
    principal = await authenticate(request, services)
    body = await json_body(request, ChatCompletionRequest)
    context = request_context(request)
    context.model = body.model
    config = authorize_model(services, principal, body.model)
    context.provider = config.provider  # until a deployment answers
    await services.limits.admit(principal)
    chat_request = to_chat_request(body)
    completion_id = f"chatcmpl-{secrets.token_hex(16)}"
    if config.server_tools:
        return await _server_tools_response(services, principal, body, chat_request, completion_id)
    if not body.stream:
        response, served = await services.router.complete(body.model, chat_request)
        context.provider = served.provider
        context.usage = response.usage
        await services.limits.charge(principal, served.alias, response.usage)
        reply = json_response(completion_json(response, completion_id, body.model))
        reply.headers.update(served_headers(served))
        return reply

    # Errors before the first event still get a proper status code; after it, an SSE error.
    routed = await services.router.stream(body.model, chat_request)
    context.provider = routed.served.provider
    include_usage = bool(body.stream_options and body.stream_options.include_usage)
    sse_body = openai_sse(
        routed.first,
        routed.rest,
        writer=ChunkWriter(completion_id, body.model),
        include_usage=include_usage,
        on_done=lambda done: _record_done(context, done),
        on_error=lambda exc: _record_error(context, exc),
    )
    return EventStreamResponse(
        services.limits.charge_after(sse_body, principal, routed.served.alias, context),
        headers=served_headers(routed.served),
    )


@router.post(
    "/chat/completions", name="chat_completions", response_model=None, responses=CHAT_RESPONSES
)
async def chat_completions_declared(body: ChatCompletionRequest) -> Response:
    """Declares the route and its body for OpenAPI; ``chat_completions`` serves every request."""
    raise AssertionError("POST /v1/chat/completions is a hot route: chat_completions serves it")


HOT_ROUTES = {("POST", "/v1/chat/completions"): chat_completions}


async def _server_tools_response(
    services: Services,
    principal: Principal,
    body: ChatCompletionRequest,
    chat_request: ChatRequest,
    completion_id: str,
) -> Response:
    outcome = await run_server_tools(services, principal, body.model, chat_request)
    answer = ChatResponse(AssistantMessage(content=outcome.content), "stop", Usage(), body.model)
    headers = {"x-gateway-conversation-id": outcome.conversation_id}
    if not body.stream:
        response = json_response(completion_json(answer, completion_id, body.model))
        response.headers.update(headers)
        return response

    async def replay() -> AsyncGenerator[StreamEvent, None]:
        yield StreamDone(answer)

    include_usage = bool(body.stream_options and body.stream_options.include_usage)
    return EventStreamResponse(
        openai_sse(
            TextDelta(outcome.content),
            replay(),
            writer=ChunkWriter(completion_id, body.model),
            include_usage=include_usage,
            on_done=lambda done: None,
            on_error=lambda exc: None,
        ),
        headers=headers,
    )


def _record_done(context: RequestContext, done: StreamDone) -> None:
    context.usage = done.response.usage


def _record_error(context: RequestContext, exc: GatewayError) -> None:
    context.fail(exc)


def _model_json(name: str, provider: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 0, "owned_by": provider}


@router.get("/models")
async def list_models(principal: CurrentPrincipal, services: ServicesDep) -> Response:
    models = services.registry.visible_to(principal.roles)
    return json_response(
        {"object": "list", "data": [_model_json(m.name, m.provider) for m in models]}
    )


@router.get("/models/{model:path}")
async def retrieve_model(
    model: str, principal: CurrentPrincipal, services: ServicesDep
) -> Response:
    deployment = services.registry.get(model)
    if not role_allows(deployment.config, principal.roles):
        raise ModelNotFound(f"The model `{model}` does not exist.", param="model")
    return json_response(_model_json(model, deployment.config.provider))
