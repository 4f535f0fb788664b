"""``/v1/responses``: the OpenAI Responses API over every model in the registry.

A request goes through the same steps as a chat completion (``gateway.chat_route``: key, model
roles, limits, router, usage, log line); the conversation's history (``previous_response_id``)
and the storing of the answer are this API's own. It is passed through to the provider's own
Responses API when every deployment that may answer serves it (``passthrough.py``), and
translated to the canonical conversation otherwise (``convert.py``, ``stream.py``); both paths
refuse the same input and tools. A ``server_tools`` model is called like any other here, as on
``/v1/messages``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Literal

from fastapi import APIRouter, Query
from starlette.requests import Request
from starlette.responses import Response

from accounts.limits.reservations import Reservation
from accounts.principals import Principal
from chat_service.errors import HistoryTooLarge
from chat_service.messages import history_bytes
from gateway import sse
from gateway.auth import CurrentPrincipal, ServicesDep, authenticate, authorize_model
from gateway.chat_route import (
    event_stream,
    json_body,
    require_chat_model,
    reserve_spend,
    served_headers,
)
from gateway.context import RequestContext, request_context
from gateway.errors import TooManyMessages
from gateway.providers import TOOL_SCHEMA_CONVERTERS
from gateway.responses import json_response
from gateway.responses_api.builtin_tools import mapped_builtins
from gateway.responses_api.convert import (
    input_messages,
    new_id,
    output_messages,
    response_format,
    tool_choice,
    tool_specs,
    whole_response_json,
)
from gateway.responses_api.items import from_canonical, item_page, listed, request_items
from gateway.responses_api.passthrough import Rewrite, relay, upstream_call
from gateway.responses_api.schemas import ResponsesRequest
from gateway.responses_api.store import Outcome, ResponseStore, Stored, not_found
from gateway.responses_api.stream import ResponseWriter
from gateway.services import Services, get_services
from llm_service.config import ModelConfig
from llm_service.errors import InvalidRequest
from llm_service.types import (
    JSON,
    ChatRequest,
    Message,
    Reasoning,
    ResponseFormat,
    SamplingParams,
    SystemMessage,
    ToolSpec,
)

# Their adapters send ``response_format`` on (Chat Completions' field; Ollama's ``format``).
_STRUCTURED_OUTPUT_PROVIDERS = frozenset({"openai", "ollama", "litellm"})
# Anthropic holds an answer to a JSON schema (output_config.format), not to "any JSON object".
_SCHEMA_OUTPUT_PROVIDERS = _STRUCTURED_OUTPUT_PROVIDERS | {"anthropic"}

router = APIRouter(prefix="/v1", tags=["responses"])


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
    previous = await _previous(store, body, principal)
    mapped = mapped_builtins(
        body.tools or [],
        services.settings.responses_builtin_tools,
        lambda: services.tools.offer(principal.roles).tools,
    )
    tools = tool_specs(body, mapped)  # the same 400s on both paths
    conversation = [*(previous.conversation if previous else []), *input_messages(body)]
    if len(conversation) > services.settings.max_messages:
        raise TooManyMessages(
            f"The conversation has more than {services.settings.max_messages} messages, "
            "previous responses included."
        )
    if history_bytes(conversation) > services.settings.max_history_bytes:
        raise HistoryTooLarge(services.settings.max_history_bytes)
    this_input = request_items(body)
    turn = _Turn(
        store if body.store else None,
        principal,
        body,
        conversation,
        _history_items(previous),
        this_input,
    )
    reservation = await reserve_spend(
        services, principal, request, body.model, body.max_output_tokens
    )
    try:
        if services.router.serves_responses(body.model):
            return await _passed_through(services, reservation, turn, mapped, context)
        return await _translated(services, reservation, turn, tools, config, context=context)
    except BaseException:
        await services.limits.settle(reservation, None)  # a no-op once settled
        raise


async def _translated(
    services: Services,
    reservation: Reservation,
    turn: _Turn,
    tools: tuple[ToolSpec, ...],
    config: ModelConfig,
    *,
    context: RequestContext,
) -> Response:
    body = turn.body
    chat_request = services.prompt_guard.screen(
        turn.principal, _chat_request(body, turn.conversation, tools, _format_for(config, body))
    )
    response_id = new_id("resp")
    if not body.stream:
        answer, served = await services.router.complete(body.model, chat_request)
        context.provider = served.provider
        context.usage = answer.usage
        await services.limits.settle(reservation, answer.usage, served.alias)
        answer = services.prompt_guard.screen_answer(turn.principal, answer)
        payload = whole_response_json(answer, response_id, body)
        await turn.finished(payload)
        return json_response(payload, headers=served_headers(served))

    routed = await services.router.stream(body.model, chat_request)
    context.provider = routed.served.provider
    writer = ResponseWriter(response_id, body)
    events = _stored_first(event_stream(routed.first, routed.rest, writer, context), writer, turn)
    return sse.EventStreamResponse(
        services.limits.settle_after(events, reservation, routed.served.alias, context),
        headers=served_headers(routed.served),
    )


@dataclass(frozen=True, slots=True)
class _Turn:
    """One request's conversation, and the storing of its answer (``store`` None: not kept)."""

    store: ResponseStore | None
    principal: Principal
    body: ResponsesRequest
    conversation: list[Message]  # stored history, then this input (canonical)
    history: list[JSON]  # the stored history as Responses API items
    this_input: list[JSON]  # this input as items

    async def finished(self, response: JSON) -> None:
        if self.store is None:
            return
        output = response["output"]
        outcome = Outcome(
            [*self.conversation, *output_messages(output)],
            [*self.history, *self.this_input, *output],
            listed(self.this_input),
        )
        await self.store.save(self.principal.key_id, self.body.model, response, outcome)


async def _passed_through(
    services: Services,
    reservation: Reservation,
    turn: _Turn,
    mapped: dict[int, ToolSpec | None],
    context: RequestContext,
) -> Response:
    body = turn.body
    call = upstream_call(
        body, turn.history, turn.this_input, mapped, TOOL_SCHEMA_CONVERTERS["openai"]
    )
    rewrite = Rewrite(new_id("resp"), body)
    if not body.stream:
        answer, served = await services.router.respond(body.model, call)
        context.provider = served.provider
        context.usage = answer.usage
        await services.limits.settle(reservation, answer.usage, served.alias)
        payload = rewrite.response(answer.response)
        await turn.finished(payload)
        return json_response(payload, headers=served_headers(served))
    routed = await services.router.respond_stream(body.model, call)
    context.provider = routed.served.provider
    events = relay(routed, rewrite, context, turn.finished)
    return sse.EventStreamResponse(
        services.limits.settle_after(events, reservation, routed.served.alias, context),
        headers=served_headers(routed.served),
    )


async def _previous(
    store: ResponseStore, body: ResponsesRequest, principal: Principal
) -> Stored | None:
    if body.previous_response_id is None:
        return None
    stored = await store.get(body.previous_response_id, principal.key_id)
    if stored is None:
        raise not_found(body.previous_response_id, param="previous_response_id")
    return stored


def _history_items(previous: Stored | None) -> list[JSON]:
    if previous is None:
        return []
    if previous.items is not None:
        return previous.items
    return from_canonical(previous.conversation)


def _format_for(config: ModelConfig, body: ResponsesRequest) -> ResponseFormat | None:
    """``text.format`` as the canonical response format, refused for a provider that cannot
    hold the answer to it (rather than answering free text the caller would fail to parse)."""
    wanted = response_format(body)
    if wanted is None:
        return None
    providers = {config.provider, *(d.provider for d in config.deployments if d.provider)}
    able = (
        _SCHEMA_OUTPUT_PROVIDERS if wanted.type == "json_schema" else _STRUCTURED_OUTPUT_PROVIDERS
    )
    unable = sorted(providers - able)
    if unable:
        raise InvalidRequest(
            f"The model `{config.name}` (provider {', '.join(unable)}) cannot be held to "
            f"`text.format` of type `{wanted.type}` by this gateway; send `text` or use a "
            f"model of provider {', '.join(sorted(able))}.",
            param="text.format",
        )
    return wanted


def _chat_request(
    body: ResponsesRequest,
    conversation: list[Message],
    tools: tuple[ToolSpec, ...],
    structured: ResponseFormat | None,
) -> ChatRequest:
    # Instructions belong to this request only: a follow-up's own replace them.
    system: list[Message] = [SystemMessage(body.instructions)] if body.instructions else []
    return ChatRequest(
        messages=(*system, *conversation),
        tools=tools,
        tool_choice=tool_choice(body),
        parallel_tool_calls=body.parallel_tool_calls,
        params=SamplingParams(
            temperature=body.temperature,
            top_p=body.top_p,
            max_tokens=body.max_output_tokens,
            response_format=structured,
            user=body.user,
            reasoning=_reasoning(body),
        ),
    )


def _reasoning(body: ResponsesRequest) -> Reasoning | None:
    effort = body.reasoning.effort if body.reasoning is not None else None
    return None if effort is None else Reasoning(effort=effort)


async def _stored_first(
    events: AsyncIterator[bytes], writer: ResponseWriter, turn: _Turn
) -> AsyncIterator[bytes]:
    """The stream, with the response stored before its ``response.completed`` is sent: a caller
    may name it as ``previous_response_id`` the moment it sees it."""
    stored = False
    async for chunk in events:
        if writer.final is not None and not stored:
            stored = True
            await turn.finished(writer.final)
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


@router.get("/responses/{response_id}/input_items")
async def list_input_items(
    response_id: str,
    principal: CurrentPrincipal,
    services: ServicesDep,
    *,
    after: str | None = Query(None, description="an item id: list the items after it"),
    limit: int = Query(20, ge=1, le=100),
    order: Literal["asc", "desc"] = Query("desc"),
) -> Response:
    """This response's own input items (not those of the responses before it), with ids."""
    stored = await ResponseStore(services.sessions).get(response_id, principal.key_id)
    if stored is None:
        raise not_found(response_id)
    return json_response(item_page(stored.input_items or [], after, limit, order))
