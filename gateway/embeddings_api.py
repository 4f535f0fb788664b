"""``POST /v1/embeddings``: OpenAI's embeddings API over the registry's embedding models.

The same steps as a chat request (key, model roles, limits, router with retries and fallbacks,
usage, log line); only models with ``kind: embedding`` answer here, and only here.
"""

from __future__ import annotations

import base64
import struct
from typing import Annotated, Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import Response

from gateway.auth import authenticate, authorize_model
from gateway.chat_route import json_body, reserve_spend, served_headers
from gateway.context import request_context
from gateway.responses import json_response
from gateway.services import get_services
from llm_service.config import ModelConfig
from llm_service.errors import InvalidRequest
from llm_service.types import EmbeddingRequest, EmbeddingResponse

router = APIRouter(prefix="/v1", tags=["openai"])

# OpenAI's own limit on inputs per request; each a non-empty string.
MAX_INPUTS = 2048
Text = Annotated[str, Field(min_length=1)]


class EmbeddingsRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model: str = Field(min_length=1)
    # Token-id inputs (lists of integers) are not accepted: not every provider takes them.
    input: Text | Annotated[list[Text], Field(min_length=1, max_length=MAX_INPUTS)]
    dimensions: int | None = Field(None, ge=1)
    encoding_format: Literal["float", "base64"] = "float"
    user: str | None = None


def embedding_model(config: ModelConfig) -> None:
    if config.kind != "embedding":
        raise InvalidRequest(
            f"The model `{config.name}` is a chat model; /v1/embeddings serves only embedding "
            "models.",
            param="model",
        )


def _vector_json(vector: tuple[float, ...], encoding: str) -> list[float] | str:
    if encoding == "float":
        return list(vector)
    # What OpenAI sends and the SDK decodes: little-endian float32, base64.
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")


def embeddings_json(response: EmbeddingResponse, model: str, encoding: str) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [
            {"object": "embedding", "index": index, "embedding": _vector_json(vector, encoding)}
            for index, vector in enumerate(response.vectors)
        ],
        "model": model,
        "usage": {
            "prompt_tokens": response.usage.prompt_tokens,
            "total_tokens": response.usage.prompt_tokens,
        },
    }


async def create_embeddings(request: Request) -> Response:
    services = await get_services(request)
    principal = await authenticate(request, services)
    body = await json_body(request, EmbeddingsRequest.model_validate_json)
    context = request_context(request)
    context.model = body.model
    config = authorize_model(services, principal, body.model)
    embedding_model(config)
    context.provider = config.provider  # until a deployment answers
    inputs = (body.input,) if isinstance(body.input, str) else tuple(body.input)
    # An embedding has no output tokens: the worst case is its input.
    reservation = await reserve_spend(services, principal, request, body.model, 0)
    try:
        response, served = await services.router.embed(
            body.model, EmbeddingRequest(inputs, body.dimensions, body.user)
        )
    except BaseException:
        await services.limits.settle(reservation, None)  # never answered: it costs nothing
        raise
    context.provider = served.provider
    context.usage = response.usage
    await services.limits.settle(reservation, response.usage, served.alias)
    return json_response(
        embeddings_json(response, body.model, body.encoding_format),
        headers=served_headers(served),
    )


@router.post("/embeddings", name="create_embeddings", response_model=None)
async def create_embeddings_declared(body: EmbeddingsRequest) -> Response:
    """Declares the route and its body for OpenAPI; ``create_embeddings`` serves every request."""
    raise AssertionError("POST /v1/embeddings is a hot route: create_embeddings serves it")


HOT_ROUTES = {("POST", "/v1/embeddings"): create_embeddings}
