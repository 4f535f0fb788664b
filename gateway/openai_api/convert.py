"""OpenAI wire format <-> canonical types, for the inbound OpenAI-compatible API."""

from __future__ import annotations

import time

from gateway.openai_api.schemas import (
    AssistantMessageIn,
    ChatCompletionRequest,
    ImageContent,
    MessageIn,
    NamedToolChoiceIn,
    ResponseFormatIn,
    ResponseFormatJsonSchema,
    SystemMessageIn,
    TextContent,
    ToolMessageIn,
    UserMessageIn,
)
from llm_service.assemble import arguments_json, tool_call
from llm_service.errors import InvalidRequest
from llm_service.types import (
    JSON,
    AssistantMessage,
    ChatRequest,
    ChatResponse,
    ContentPart,
    ImagePart,
    Message,
    NamedToolChoice,
    Reasoning,
    ResponseFormat,
    SamplingParams,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolChoice,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)

_EMPTY_OBJECT_SCHEMA: JSON = {"type": "object", "properties": {}}


def to_chat_request(body: ChatCompletionRequest) -> ChatRequest:
    stop = (body.stop,) if isinstance(body.stop, str) else tuple(body.stop or ())
    tool_choice: ToolChoice | None = None
    if isinstance(body.tool_choice, NamedToolChoiceIn):
        tool_choice = NamedToolChoice(body.tool_choice.function.name)
    else:
        tool_choice = body.tool_choice
    return ChatRequest(
        messages=tuple(_message(m, i) for i, m in enumerate(body.messages)),
        tools=tuple(
            ToolSpec(
                name=t.function.name,
                description=t.function.description or "",
                parameters=t.function.parameters or dict(_EMPTY_OBJECT_SCHEMA),
            )
            for t in body.tools or ()
        ),
        tool_choice=tool_choice,
        parallel_tool_calls=body.parallel_tool_calls,
        params=SamplingParams(
            temperature=body.temperature,
            top_p=body.top_p,
            max_tokens=body.max_completion_tokens or body.max_tokens,
            stop=stop,
            seed=body.seed,
            presence_penalty=body.presence_penalty,
            frequency_penalty=body.frequency_penalty,
            response_format=_response_format(body.response_format),
            user=body.user,
            reasoning=Reasoning(effort=body.reasoning_effort) if body.reasoning_effort else None,
            prompt_cache_key=body.prompt_cache_key,
        ),
    )


def _response_format(fmt: ResponseFormatIn | None) -> ResponseFormat | None:
    if fmt is None or fmt.type == "text":
        return None
    if not isinstance(fmt, ResponseFormatJsonSchema):
        return ResponseFormat(fmt.type)
    spec = fmt.json_schema
    return ResponseFormat(
        "json_schema",
        schema=spec.schema_,
        name=spec.name,
        strict=spec.strict,
        description=spec.description,
    )


def _text(content: str | list[TextContent] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(part.text for part in content)


def _message(message: MessageIn, index: int) -> Message:
    match message:
        case SystemMessageIn():
            return SystemMessage(_text(message.content))
        case UserMessageIn(content=str() as text):
            return UserMessage(text)
        case UserMessageIn(content=list() as parts):
            return UserMessage(tuple(_part(p) for p in parts))
        case AssistantMessageIn():
            calls = tuple(
                tool_call(c.id, c.function.name, c.function.arguments)
                for c in message.tool_calls or ()
            )
            return AssistantMessage(content=_text(message.content) or None, tool_calls=calls)
        case ToolMessageIn():
            return ToolResultMessage(message.tool_call_id, _tool_text(message, index))
    raise AssertionError(f"unhandled message {message!r}")  # pragma: no cover


def _tool_text(message: ToolMessageIn, index: int) -> str:
    if isinstance(message.content, str):
        return message.content
    for position, part in enumerate(message.content):
        if isinstance(part, ImageContent):
            raise InvalidRequest(
                "Image content is not allowed in a `tool` message (OpenAI refuses it too): send "
                "the image in a `user` message after the tool messages.",
                param=f"messages[{index}].content[{position}]",
            )
    return "".join(part.text for part in message.content if isinstance(part, TextContent))


def _part(part: TextContent | ImageContent) -> ContentPart:
    if isinstance(part, TextContent):
        return TextPart(part.text)
    return ImagePart(part.image_url.url, part.image_url.detail)


def tool_calls_json(calls: tuple[ToolCall, ...]) -> list[JSON]:
    return [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": arguments_json(call)},
        }
        for call in calls
    ]


def usage_json(usage: Usage) -> JSON:
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
    }


def completion_json(response: ChatResponse, completion_id: str, model: str) -> JSON:
    message: JSON = {"role": "assistant", "content": response.message.content, "refusal": None}
    if response.message.tool_calls:
        message["tool_calls"] = tool_calls_json(response.message.tool_calls)
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": response.finish_reason,
                "logprobs": None,
            }
        ],
        "usage": usage_json(response.usage),
    }
