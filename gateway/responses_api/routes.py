"""``/v1/responses``: the OpenAI Responses API over every model in the registry.

A request is translated to the canonical conversation and goes through the same steps as a chat
completion (``gateway.chat_route``: key, model roles, limits, router, usage, log line); only the
conversation's history (``previous_response_id``) and the storing of the answer are this API's
own. A ``server_tools`` model is called like any other here, as on ``/v1/messages``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from gateway import sse
from gateway.auth import CurrentPrincipal, ServicesDep, authenticate, authorize_model
from gateway.chat_route import event_stream, json_body, require_chat_model, served_headers
from gateway.context import request_context
from gateway.keys import Principal
from gateway.responses import json_response
from gateway.responses_api.convert import (
    input_messages,
    new_id,
    output_messages,
    tool_choice,
    tool_specs,
    whole_response_json,
)
from gateway.responses_api.schemas import ResponsesRequest
from gateway.responses_api.store import ResponseStore, not_found
from gateway.responses_api.stream import ResponseWriter
from gateway.services import get_services
from llm_service.errors import GatewayError
from llm_service.types import ChatRequest, Message, SamplingParams, SystemMessage

router = APIRouter(prefix="/v1", tags=["responses"])


class TooManyMessages(GatewayError):
    """``max_messages`` holds for the whole conversation a request sends, stored history too
    (the JSON guard counts only a body's ``messages``)."""

    status_code = 413
    error_type = "invalid_request_error"
    code = "too_many_messages"


async def create_response(request: Request) -> Response:
    services = await get_services(request)
    principal = await authenticate(request, services)
    body = await json_body(request, ResponsesRequest.model_validate_json)
    context = request_context(request)
    context.model = body.model
    config = authorize_model(services, principal, body.model)
    require_chat_model(config)
    context.provider = config.provider  # until a deployment answers
    store = ResponseStore(services.sessions)
    conversation = [*await _history(store, body, principal), *input_messages(body)]
    if len(conversation) > services.settings.max_messages:
        raise TooManyMessages(
            f"The conversation has more than {services.settings.max_messages} messages, "
            "previous responses included."
        )
    chat_request = _chat_request(body, conversation)
    await services.limits.admit(principal)
    response_id = new_id("resp")
    if not body.stream:
        answer, served = await services.router.complete(body.model, chat_request)
        context.provider = served.provider
        context.usage = answer.usage
        await services.limits.charge(principal, served.alias, answer.usage)
        payload = whole_response_json(answer, response_id, body)
        if body.store:
            outcome = [*conversation, *output_messages(payload["output"])]
            await store.save(principal.key_id, body.model, payload, outcome)
        return json_response(payload, headers=served_headers(served))

    routed = await services.router.stream(body.model, chat_request)
    context.provider = routed.served.provider
    writer = ResponseWriter(response_id, body)
    events = event_stream(routed.first, routed.rest, writer, context)
    if body.store:
        events = _stored_first(events, writer, store, principal, conversation)
    return sse.EventStreamResponse(
        services.limits.charge_after(events, principal, routed.served.alias, context),
        headers=served_headers(routed.served),
    )


async def _history(
    store: ResponseStore, body: ResponsesRequest, principal: Principal
) -> list[Message]:
    if body.previous_response_id is None:
        return []
    stored = await store.get(body.previous_response_id, principal.key_id)
    if stored is None:
        raise not_found(body.previous_response_id, param="previous_response_id")
    return stored.conversation


def _chat_request(body: ResponsesRequest, conversation: list[Message]) -> ChatRequest:
    # Instructions belong to this request only: a follow-up's own replace them.
    system: list[Message] = [SystemMessage(body.instructions)] if body.instructions else []
    return ChatRequest(
        messages=(*system, *conversation),
        tools=tool_specs(body),
        tool_choice=tool_choice(body),
        parallel_tool_calls=body.parallel_tool_calls,
        params=SamplingParams(
            temperature=body.temperature,
            top_p=body.top_p,
            max_tokens=body.max_output_tokens,
            user=body.user,
        ),
    )


async def _stored_first(
    events: AsyncIterator[bytes],
    writer: ResponseWriter,
    store: ResponseStore,
    principal: Principal,
    conversation: list[Message],
) -> AsyncIterator[bytes]:
    """The stream, with the response stored before its ``response.completed`` is sent: a caller
    may name it as ``previous_response_id`` the moment it sees it."""
    stored = False
    async for chunk in events:
        if writer.final is not None and not stored:
            stored = True
            outcome = [*conversation, *output_messages(writer.final["output"])]
            await store.save(principal.key_id, writer.body.model, writer.final, outcome)
        yield chunk


@router.post(
    "/responses",
    name="create_response",
    response_model=None,
    responses=sse.stream_responses("A response, or with `stream: true` Responses API events"),
)
async def create_response_declared(body: ResponsesRequest) -> Response:
    """Declares the route and its body for OpenAPI; ``create_response`` serves every request."""
    raise AssertionError("POST /v1/responses is a hot route: create_response serves it")


HOT_ROUTES = {("POST", "/v1/responses"): create_response}


@router.get("/responses/{response_id}")
async def retrieve_response(
    response_id: str, principal: CurrentPrincipal, services: ServicesDep
) -> Response:
    stored = await ResponseStore(services.sessions).get(response_id, principal.key_id)
    if stored is None:
        raise not_found(response_id)
    return json_response(stored.response)


@router.delete("/responses/{response_id}")
async def delete_response(
    response_id: str, principal: CurrentPrincipal, services: ServicesDep
) -> Response:
    if not await ResponseStore(services.sessions).delete(response_id, principal.key_id):
        raise not_found(response_id)
    return json_response({"id": response_id, "object": "response", "deleted": True})
