"""``POST /v1/messages``: the Anthropic Messages API over every model in the registry, and
``POST /v1/messages/count_tokens`` to size a request before sending it."""

from __future__ import annotations

import asyncio
import secrets
from functools import partial

from fastapi import APIRouter
from starlette.responses import Response

from gateway import sse
from gateway.anthropic_api.convert import counted_request, message_json, to_chat_request
from gateway.anthropic_api.errors import AnthropicRoute
from gateway.anthropic_api.schemas import CountTokensRequest, MessagesRequest
from gateway.anthropic_api.stream import MessageWriter
from gateway.auth import CurrentPrincipal, ServicesDep, authorize_model
from gateway.chat_route import ChatApi, require_chat_model, serve_chat
from gateway.responses import json_response
from llm_service.token_count import input_tokens

router = APIRouter(prefix="/v1", tags=["anthropic"], route_class=AnthropicRoute)


def _message_id() -> str:
    return f"msg_{secrets.token_hex(16)}"


def _message_writer(message_id: str, body: MessagesRequest) -> MessageWriter:
    return MessageWriter(message_id, body.model)


# A `server_tools` model runs the gateway's tool loop here too (docs/tool-loop.md).
MESSAGES = ChatApi(
    parse=MessagesRequest.model_validate_json,
    to_chat_request=to_chat_request,
    new_reply_id=_message_id,
    whole=message_json,
    encoder=_message_writer,
)


# ``POST /v1/messages``, served as a hot route (``gateway.hot_routes``) like the OpenAI chat
# completions: the shared flow itself is the handler.
create_message = partial(serve_chat, api=MESSAGES)


@router.post(
    "/messages",
    name="create_message",
    response_model=None,
    responses=sse.stream_responses("A message, or with `stream: true` Messages API events"),
)
async def create_message_declared(body: MessagesRequest) -> Response:
    """Declares the route, its body and its error shape; ``create_message`` serves every request."""
    raise AssertionError("POST /v1/messages is a hot route: create_message serves it")


@router.post("/messages/count_tokens", name="count_message_tokens", response_model=None)
async def count_message_tokens(
    body: CountTokensRequest, principal: CurrentPrincipal, services: ServicesDep
) -> Response:
    """The request's input tokens (``{"input_tokens": n}``), for any chat model this key may use.

    Nothing is sent to the model and nothing is charged; the count is Claude's tokenizer's, an
    estimate for other models (``llm_service.token_count``)."""
    require_chat_model(authorize_model(services, principal, body.model))
    # Tokenizing a long conversation takes milliseconds of CPU: off the event loop.
    count = await asyncio.to_thread(input_tokens, counted_request(body))
    return json_response({"input_tokens": count})


HOT_ROUTES = {("POST", "/v1/messages"): create_message}
