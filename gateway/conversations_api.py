"""The native conversation API: persisted history, the tool loop, typed streaming events."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import Response

from accounts.principals import Principal
from chat_service.errors import ConversationNotFound
from chat_service.events import TurnEvent, TurnSummary
from chat_service.store import ConversationInfo
from chat_service.tool_inputs import call_of
from gateway import sse
from gateway.auth import CurrentPrincipal, ServicesDep, authenticate, authorize_model
from gateway.chat_route import json_body
from gateway.responses import json_response
from gateway.services import Services, get_services
from gateway.sse import EventStreamResponse
from gateway.tools_api import check_bundle
from llm_service.types import UserMessage

router = APIRouter(prefix="/v1/conversations", tags=["conversations"])


class NewConversation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1)
    system_prompt: str | None = None
    bundle: str | None = Field(None, description="narrow the offered tools to a named bundle")


class NewMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1)
    stream: bool = False


class InputAnswerBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = Field(
        None, description="with `accept` of a form request: the values, per `requested_schema`"
    )


async def _owned(
    services: Services, principal: Principal, conversation_id: str
) -> ConversationInfo:
    conversation = await services.conversations.get(conversation_id)
    if conversation.api_key_id != principal.key_id and not principal.is_admin:
        raise ConversationNotFound(f"No conversation `{conversation_id}`.")
    return conversation


@router.post("", status_code=201)
async def create_conversation(
    body: NewConversation, principal: CurrentPrincipal, services: ServicesDep
) -> Response:
    authorize_model(services, principal, body.model)
    check_bundle(services, body.bundle)
    conversation = await services.conversations.create(
        principal.key_id, body.model, principal.roles, body.system_prompt, body.bundle
    )
    return json_response(conversation.to_json(), 201)


async def send_message(request: Request) -> Response:
    """Served past FastAPI's router (``gateway.hot_routes``), as ``/v1/chat/completions`` is."""
    services = await get_services(request)
    principal = await authenticate(request, services)
    body = await json_body(request, NewMessage.model_validate_json)
    conversation_id: str = request.path_params["conversation_id"]
    # Its key and model never change, so the store answers from memory once it has read them;
    # a conversation deleted since is found missing when the turn begins (404 all the same).
    owner = await services.conversations.owner(conversation_id)
    if owner.api_key_id != principal.key_id and not principal.is_admin:
        raise ConversationNotFound(f"No conversation `{conversation_id}`.")
    authorize_model(services, principal, owner.model)
    await services.limits.admit(principal)
    # Usage is recorded per model call by the turn itself (turns outlive requests), so the
    # request context names no model and the access log records no tokens here.
    content = services.prompt_guard.screen_text(principal, body.content)
    turn = services.turns.start(conversation_id, principal.roles, UserMessage(content))
    # The first event is awaited here so a busy conversation answers 409, not a broken stream.
    first = await anext(turn)
    if body.stream:
        watched = services.background.relay(_prepend(first, turn))
        return EventStreamResponse(sse.encode_all(watched))
    summary = TurnSummary()
    for event in await services.background.complete(_prepend(first, turn)):
        summary.add(event)
    return json_response(summary.to_json(conversation_id))


@router.post(
    "/{conversation_id}/messages",
    name="send_message",
    response_model=None,
    responses=sse.stream_responses("The turn's result, or with `stream: true` its typed events"),
)
async def send_message_declared(conversation_id: str, body: NewMessage) -> Response:
    """Declares the route and its body for OpenAPI; ``send_message`` serves every request."""
    raise AssertionError("POST /v1/conversations/{id}/messages is a hot route")


HOT_ROUTES = {("POST", "/v1/conversations/{conversation_id}/messages"): send_message}


async def _prepend(first: TurnEvent, rest: AsyncIterator[TurnEvent]) -> AsyncIterator[TurnEvent]:
    yield first
    async for event in rest:
        yield event


@router.get("/{conversation_id}")
async def get_conversation(
    conversation_id: str, principal: CurrentPrincipal, services: ServicesDep
) -> Response:
    conversation = await _owned(services, principal, conversation_id)
    messages = await services.conversations.messages(conversation_id)
    calls = await services.tool_calls.for_conversation(conversation_id)
    return json_response(
        {
            **conversation.to_json(),
            "messages": [m.to_json() for m in messages],
            "tool_calls": [c.to_json() for c in calls],
        }
    )


@router.get(
    "/{conversation_id}/events",
    responses=sse.stream_responses("The turn's durable events", json_too=False),
)
async def follow_events(
    conversation_id: str,
    principal: CurrentPrincipal,
    services: ServicesDep,
    after: int = Query(0, ge=0, description="the last event id already seen"),
) -> Response:
    """Durable events after ``after``, until the current turn completes or fails."""
    await _owned(services, principal, conversation_id)
    return EventStreamResponse(_follow(services, conversation_id, after))


async def _follow(services: Services, conversation_id: str, after: int) -> AsyncIterator[bytes]:
    settings = services.settings.tool_loop
    deadline = settings.approval_expiry_seconds + settings.turn_timeout_seconds
    events = services.conversations.follow(conversation_id, after, settings.follow_poll_seconds)
    async with asyncio.timeout(deadline):
        async for event_id, event in events:
            yield sse.encode(event, event_id)


@router.post("/{conversation_id}/tool-calls/{record_id}/input")
async def answer_input(
    conversation_id: str,
    record_id: str,
    body: InputAnswerBody,
    principal: CurrentPrincipal,
    services: ServicesDep,
) -> Response:
    """Answers a running call's `tool_call.input_required`, on any replica: the replica running
    the call reads the answer from the database. 400 when accepted content breaks the requested
    schema (the request stays open), 409 when the call is not waiting for input."""
    await _owned(services, principal, conversation_id)
    call = await call_of(services.tool_calls, conversation_id, record_id)
    answered = await services.tool_inputs.answer(call, principal.key_id, body.action, body.content)
    return json_response(answered.to_json())
