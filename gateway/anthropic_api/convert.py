"""Anthropic Messages wire format <-> canonical types, for the inbound Messages API."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gateway.anthropic_api.schemas import (
    AssistantMessageIn,
    Base64ImageSource,
    ImageBlock,
    MessageIn,
    MessagesRequest,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolChoiceAny,
    ToolChoiceAuto,
    ToolChoiceIn,
    ToolChoiceTool,
    ToolResultBlock,
    ToolUseBlock,
    UserMessageIn,
)
from llm_service.errors import InvalidRequest
from llm_service.types import (
    AssistantMessage,
    ChatRequest,
    ChatResponse,
    ContentPart,
    FinishReason,
    ImagePart,
    Message,
    NamedToolChoice,
    SamplingParams,
    SystemMessage,
    TextPart,
    Thinking,
    ToolCall,
    ToolChoice,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)

JSON = dict[str, Any]

STOP_REASONS: dict[FinishReason, str] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
}


def to_chat_request(body: MessagesRequest) -> ChatRequest:
    system: tuple[Message, ...] = ()
    if body.system:
        system = (SystemMessage(_system_text(body.system)),)
    tool_choice, parallel = _tool_choice(body.tool_choice)
    messages = tuple(
        converted
        for index, message in enumerate(body.messages)
        for converted in _messages(message, index)
    )
    return ChatRequest(
        messages=system + messages,
        tools=tuple(
            ToolSpec(name=t.name, description=t.description or "", parameters=t.input_schema)
            for t in body.tools or ()
        ),
        tool_choice=tool_choice,
        parallel_tool_calls=parallel,
        params=SamplingParams(
            temperature=body.temperature,
            top_p=body.top_p,
            max_tokens=body.max_tokens,
            stop=tuple(body.stop_sequences or ()),
            user=body.metadata.user_id if body.metadata else None,
        ),
    )


def _system_text(system: str | list[TextBlock]) -> str:
    if isinstance(system, str):
        return system
    return "\n\n".join(block.text for block in system)


def _tool_choice(choice: ToolChoiceIn | None) -> tuple[ToolChoice | None, bool | None]:
    """The canonical choice and ``parallel_tool_calls`` (None: the provider's default)."""
    match choice:
        case None:
            return None, None
        case ToolChoiceAuto() | ToolChoiceAny() | ToolChoiceTool():
            disabled = choice.disable_parallel_tool_use
            parallel = None if disabled is None else not disabled
            return _named_choice(choice), parallel
    return "none", None


def _named_choice(choice: ToolChoiceAuto | ToolChoiceAny | ToolChoiceTool) -> ToolChoice:
    if isinstance(choice, ToolChoiceTool):
        return NamedToolChoice(choice.name)
    return "required" if isinstance(choice, ToolChoiceAny) else "auto"


def _messages(message: MessageIn, index: int) -> Iterator[Message]:
    if isinstance(message, AssistantMessageIn):
        yield _assistant(message)
        return
    assert isinstance(message, UserMessageIn)
    if isinstance(message.content, str):
        yield UserMessage(message.content)
        return
    # Tool results answer the previous assistant turn, so they come before the user's own words
    # (as Anthropic requires them to); every other provider wants them as separate messages.
    parts: list[ContentPart] = []
    for position, block in enumerate(message.content):
        if isinstance(block, ToolResultBlock):
            yield _tool_result(block, f"messages.{index}.content.{position}")
        else:
            parts.append(_part(block))
    if parts:
        yield UserMessage(tuple(parts))


def _tool_result(block: ToolResultBlock, where: str) -> ToolResultMessage:
    content = block.content
    if isinstance(content, list):
        if any(isinstance(item, ImageBlock) for item in content):
            raise InvalidRequest(
                "Images inside `tool_result` blocks are not supported by this gateway.",
                param=f"{where}.content",
            )
        content = "".join(item.text for item in content if isinstance(item, TextBlock))
    return ToolResultMessage(block.tool_use_id, content or "", is_error=bool(block.is_error))


def _part(block: TextBlock | ImageBlock) -> ContentPart:
    if isinstance(block, TextBlock):
        return TextPart(block.text)
    source = block.source
    if isinstance(source, Base64ImageSource):
        return ImagePart(f"data:{source.media_type};base64,{source.data}")
    return ImagePart(source.url)


def _assistant(message: AssistantMessageIn) -> AssistantMessage:
    if isinstance(message.content, str):
        return AssistantMessage(content=message.content or None)
    text: list[str] = []
    calls: list[ToolCall] = []
    thinking: list[Thinking] = []
    for block in message.content:
        match block:
            case TextBlock():
                text.append(block.text)
            case ToolUseBlock():
                calls.append(ToolCall(id=block.id, name=block.name, arguments=block.input))
            case ThinkingBlock():
                thinking.append(Thinking(block.thinking, block.signature))
            case RedactedThinkingBlock():
                # The opaque payload travels in ``text``; only Anthropic can read it back.
                thinking.append(Thinking(block.data, redacted=True))
    return AssistantMessage(
        content="".join(text) or None, tool_calls=tuple(calls), thinking=tuple(thinking)
    )


def thinking_json(thinking: Thinking) -> JSON:
    if thinking.redacted:
        return {"type": "redacted_thinking", "data": thinking.text}
    return {"type": "thinking", "thinking": thinking.text, "signature": thinking.signature or ""}


def tool_use_json(call: ToolCall) -> JSON:
    return {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}


def usage_json(usage: Usage) -> JSON:
    return {"input_tokens": usage.prompt_tokens, "output_tokens": usage.completion_tokens}


def stop_json(response: ChatResponse) -> JSON:
    if response.stop_sequence is not None and response.finish_reason == "stop":
        return {"stop_reason": "stop_sequence", "stop_sequence": response.stop_sequence}
    return {"stop_reason": STOP_REASONS[response.finish_reason], "stop_sequence": None}


def message_json(response: ChatResponse, message_id: str, model: str) -> JSON:
    message = response.message
    content = [thinking_json(t) for t in message.thinking]
    if message.content:
        content.append({"type": "text", "text": message.content})
    content.extend(tool_use_json(call) for call in message.tool_calls)
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        **stop_json(response),
        "usage": usage_json(response.usage),
    }
