"""``/v1/chat/completions`` and ``/v1/models``: the OpenAI-compatible surface."""

from __future__ import annotations

import secrets
from functools import partial
from typing import Any

from fastapi import APIRouter
from starlette.responses import Response

from gateway import sse
from gateway.auth import CurrentPrincipal, ServicesDep
from gateway.chat_route import ChatApi, serve_chat
from gateway.openai_api.convert import completion_json, to_chat_request
from gateway.openai_api.schemas import ChatCompletionRequest
from gateway.openai_api.stream import ChunkWriter
from gateway.responses import json_response
from llm_service.errors import ModelNotFound
from llm_service.registry import role_allows

router = APIRouter(prefix="/v1", tags=["openai"])


def _completion_id() -> str:
    return f"chatcmpl-{secrets.token_hex(16)}"


def _chunk_writer(completion_id: str, body: ChatCompletionRequest) -> ChunkWriter:
    include_usage = bool(body.stream_options and body.stream_options.include_usage)
    return ChunkWriter(completion_id, body.model, include_usage)


CHAT_COMPLETIONS = ChatApi(
    parse=ChatCompletionRequest.model_validate_json,
    to_chat_request=to_chat_request,
    new_reply_id=_completion_id,
    whole=completion_json,
    encoder=_chunk_writer,
)


# ``POST /v1/chat/completions``, served as a hot route (``gateway.hot_routes``): the shared flow
# itself is the handler, so a request costs no extra coroutine.
chat_completions = partial(serve_chat, api=CHAT_COMPLETIONS)


@router.post(
    "/chat/completions",
    name="chat_completions",
    response_model=None,
    responses=sse.stream_responses(
        "A chat.completion, or with `stream: true` chat.completion.chunk events"
    ),
)
async def chat_completions_declared(body: ChatCompletionRequest) -> Response:
    """Declares the route and its body for OpenAPI; ``chat_completions`` serves every request."""
    raise AssertionError("POST /v1/chat/completions is a hot route: chat_completions serves it")


HOT_ROUTES = {("POST", "/v1/chat/completions"): chat_completions}


def _model_json(name: str, provider: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 0, "owned_by": provider}


@router.get("/models")
async def list_models(principal: CurrentPrincipal, services: ServicesDep) -> Response:
    # Only what this key may call: its roles' models, narrowed by its own allow-list.
    models = [m for m in services.registry.visible_to(principal.roles) if principal.may_use(m.name)]
    return json_response(
        {"object": "list", "data": [_model_json(m.name, m.provider) for m in models]}
    )


@router.get("/models/{model:path}")
async def retrieve_model(
    model: str, principal: CurrentPrincipal, services: ServicesDep
) -> Response:
    deployment = services.registry.get(model)
    if not role_allows(deployment.config, principal.roles) or not principal.may_use(model):
        raise ModelNotFound(f"The model `{model}` does not exist.", param="model")
    return json_response(_model_json(model, deployment.config.provider))
