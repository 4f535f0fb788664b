"""A Responses request to a provider that serves the Responses API itself (OpenAI), passed through.

The caller's body goes upstream as sent, so what the canonical types do not hold survives:
reasoning items with their encrypted content and summaries, ``reasoning`` and ``text`` options,
usage with reasoning and cached tokens. The gateway keeps what makes it the gateway's response:

- History is the gateway's (``previous_response_id`` names a stored response, owned by a key),
  so upstream is sent ``store: false`` and the whole conversation as items; the adapter asks for
  ``reasoning.encrypted_content``, so reasoning items replay without the provider keeping
  anything, and a fallback to another deployment (another key, region) sees the same request.
  A stored reasoning item without encrypted content cannot be replayed and is left out.
- The Response the caller gets has the gateway's id, the alias as ``model``, and the caller's
  ``store``, ``previous_response_id`` and ``tools``; streamed events are relayed as they come,
  their ``sequence_number`` included, with the response they carry rewritten the same way.
- Built-in tools mapped to MCP tools (``builtin_tools.py``) are sent as those function tools;
  unmapped ones are not sent (OpenAI would run them, outside the gateway's policy).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import orjson

from gateway.context import RequestContext
from gateway.errors import report_of
from gateway.responses_api.schemas import ResponsesRequest
from gateway.sse import frame
from llm_service.errors import GatewayError
from llm_service.router import RoutedResponses
from llm_service.types import JSON, ResponsesCall, ResponsesDone, ToolSpec

# The gateway's own: set below, or not sent (a background or OpenAI-conversation response would
# live on the provider, outside the gateway's keys and store).
_GATEWAY_FIELDS = {"model", "stream", "store", "previous_response_id", "background", "conversation"}
SchemaConverter = Callable[[JSON], JSON]


def upstream_call(
    body: ResponsesRequest,
    history: list[JSON],
    this_input: list[JSON],
    mapped: dict[int, ToolSpec | None],
    convert_schema: SchemaConverter,
) -> ResponsesCall:
    """The body sent upstream: the caller's, with the stored history, then this input, as its
    whole ``input``."""
    sent = body.model_dump(mode="json", by_alias=True, exclude_none=True, exclude=_GATEWAY_FIELDS)
    replayable = [item for item in history if not _unreplayable(item)]
    sent["input"] = [*replayable, *this_input]
    if body.tools:
        sent["tools"] = _sent_tools(body.tools, mapped, convert_schema)
    sent["store"] = False
    return ResponsesCall(sent)


def _sent_tools(
    tools: list[JSON], mapped: dict[int, ToolSpec | None], convert_schema: SchemaConverter
) -> list[JSON]:
    sent = []
    for index, tool in enumerate(tools):
        if index not in mapped:
            sent.append(tool)
        elif (spec := mapped[index]) is not None:
            sent.append(_function(spec, convert_schema))
    return sent


def _unreplayable(item: JSON) -> bool:
    return item.get("type") == "reasoning" and not item.get("encrypted_content")


def _function(spec: ToolSpec, convert_schema: SchemaConverter) -> JSON:
    return {
        "type": "function",
        "name": spec.name,
        "description": spec.description,
        "parameters": convert_schema(spec.parameters),
        "strict": False,
    }


@dataclass(frozen=True, slots=True)
class Rewrite:
    """The provider's Response as the gateway's."""

    response_id: str
    body: ResponsesRequest

    def response(self, upstream: JSON) -> JSON:
        return {
            **upstream,
            "id": self.response_id,
            "model": self.body.model,
            "store": self.body.store,
            "previous_response_id": self.body.previous_response_id,
            "tools": self.body.tools or [],
        }

    def event(self, data: JSON) -> JSON:
        carried = data.get("response")
        if isinstance(carried, dict):
            return {**data, "response": self.response(carried)}
        return data


async def relay(
    routed: RoutedResponses,
    rewrite: Rewrite,
    context: RequestContext,
    finished: Callable[[JSON], Awaitable[None]],
) -> AsyncIterator[bytes]:
    """The provider's events to the caller; ``finished`` gets the final response (to store it)
    before its ``response.completed`` is sent, so the caller may name it at once."""
    event = routed.first
    sequence = 0
    try:
        while True:
            if isinstance(event, ResponsesDone):
                context.usage = event.answer.usage
                final = rewrite.response(event.answer.response)
                await finished(final)
                yield _frame({**event.data, "response": final})
                return
            data = rewrite.event(event.data)
            number = data.get("sequence_number")
            sequence = number + 1 if isinstance(number, int) else sequence + 1
            yield _frame(data)
            following = await anext(routed.rest, None)
            if following is None:
                break
            event = following
    except GatewayError as exc:
        report = report_of(exc)
        context.fail(exc, report.error_type)
        yield _frame(_error(sequence, report.code, exc.message, exc.param))
        return
    finally:
        await routed.rest.aclose()
    message = "The upstream stream ended unexpectedly."
    yield _frame(_error(sequence, "upstream_error", message, None))


def _error(sequence: int, code: str | None, message: str, param: str | None) -> JSON:
    return {
        "type": "error",
        "sequence_number": sequence,
        "code": code,
        "message": message,
        "param": param,
    }


def _frame(data: JSON) -> bytes:
    return frame(orjson.dumps(data), str(data.get("type")))
