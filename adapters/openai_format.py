"""Canonical messages and tools in the OpenAI Chat Completions wire format.

Shared by every adapter that speaks that format (OpenAI, vLLM, llama.cpp, Azure, LiteLLM).
"""

from __future__ import annotations

from adapters.reasoning import effort_of
from adapters.schemas import openai_parameters
from adapters.tool_results import result_text, text_only_results
from llm_service.assemble import arguments_json
from llm_service.types import (
    JSON,
    AssistantMessage,
    ChatRequest,
    ImagePart,
    Message,
    NamedToolChoice,
    ResponseFormat,
    SystemMessage,
    TextPart,
    ToolChoice,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)


def format_message(message: Message) -> JSON:
    match message:
        case SystemMessage(content=content):
            return {"role": "system", "content": content}
        case UserMessage(content=str() as text):
            return {"role": "user", "content": text}
        case UserMessage(content=parts):
            assert not isinstance(parts, str)
            return {"role": "user", "content": [_format_part(p) for p in parts]}
        case AssistantMessage():
            return _format_assistant(message)
        case ToolResultMessage(tool_call_id=call_id):
            # Text only: the API refuses images in a tool message (adapters.tool_results).
            return {"role": "tool", "tool_call_id": call_id, "content": result_text(message)}


def _format_part(part: TextPart | ImagePart) -> JSON:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    image: JSON = {"url": part.url}
    if part.detail:
        image["detail"] = part.detail
    return {"type": "image_url", "image_url": image}


def _format_assistant(message: AssistantMessage) -> JSON:
    wire: JSON = {"role": "assistant", "content": message.content}
    if message.tool_calls:
        wire["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": arguments_json(call)},
            }
            for call in message.tool_calls
        ]
    return wire


def format_tool(tool: ToolSpec) -> JSON:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": openai_parameters(tool.parameters),
        },
    }


def format_tool_choice(choice: ToolChoice) -> str | JSON:
    if isinstance(choice, NamedToolChoice):
        return {"type": "function", "function": {"name": choice.name}}
    return choice


def response_format_json(fmt: ResponseFormat | None) -> JSON | None:
    if fmt is None or fmt.type == "text":
        return None
    if fmt.type == "json_object":
        return {"type": "json_object"}
    schema: JSON = {"name": fmt.name or "response", "schema": fmt.schema or {"type": "object"}}
    if fmt.strict is not None:
        schema["strict"] = fmt.strict
    if fmt.description is not None:
        schema["description"] = fmt.description
    return {"type": "json_schema", "json_schema": schema}


def request_body(request: ChatRequest, model: str, default_max_tokens: int | None) -> JSON:
    """The JSON body of a Chat Completions request, without the ``stream`` fields.

    Cache breakpoints are not sent: OpenAI-compatible servers cache prefixes on their own.
    """
    messages = text_only_results(request.messages)
    body: JSON = {"model": model, "messages": [format_message(m) for m in messages]}
    if request.tools:
        body["tools"] = [format_tool(t) for t in request.tools]
        if request.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = request.parallel_tool_calls
    if request.tool_choice is not None:
        body["tool_choice"] = format_tool_choice(request.tool_choice)
    params = request.params
    max_tokens = params.max_tokens or default_max_tokens
    optional: JSON = {
        "temperature": params.temperature,
        "top_p": params.top_p,
        "max_tokens": max_tokens,
        "stop": list(params.stop) or None,
        "seed": params.seed,
        "presence_penalty": params.presence_penalty,
        "frequency_penalty": params.frequency_penalty,
        "response_format": response_format_json(params.response_format),
        "user": params.user,
        "reasoning_effort": effort_of(params.reasoning) if params.reasoning else None,
        "prompt_cache_key": params.prompt_cache_key,
    }
    body.update({k: v for k, v in optional.items() if v is not None})
    return body
