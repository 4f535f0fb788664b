"""A route's JSON body validated in one pass from its bytes.

FastAPI's own body handling (content-type parsing, ``json.loads``, validation of the Python
objects, dependency solving) was about a tenth of a streamed request's time to its first byte on
``/v1/chat/completions`` (docs/performance.md); pydantic-core validates straight from the bytes.
Errors take the same path as FastAPI's, so callers see the same 400.
"""

from __future__ import annotations

from typing import TypeVar

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError

from gateway.input_guard import guards_body
from llm_service.errors import InvalidRequest

Model = TypeVar("Model", bound=BaseModel)


async def json_body(request: Request, model: type[Model]) -> Model:
    # Only bodies the JSON guard has checked (duplicate keys, depth, NUL, huge numbers) are read.
    if not guards_body(request.scope):
        raise InvalidRequest(
            "Send the request body as JSON, with `Content-Type: application/json`."
        )
    try:
        return model.model_validate_json(await request.body())
    except ValidationError as exc:
        raise RequestValidationError(exc.errors(include_url=False)) from None
