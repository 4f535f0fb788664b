"""Canonical messages and tools in the Anthropic Messages wire format."""

from __future__ import annotations

from typing import Any

from adapters.schemas import anthropic_input_schema
from llm_service.types import (
    AssistantMessage,
    ChatRequest,
    ImagePart,
    Message,
    NamedToolChoice,
    SystemMessage,
    TextPart,
    Thinking,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)

JSON = dict[str, Any]

# The Messages API requires max_tokens; this is used when neither caller nor config sets one.
DEFAULT_MAX_TOKENS = 4096


def request_body(request: ChatRequest, model: str, default_max_tokens: int | None) -> JSON:
    """The keyword arguments of ``messages.create``, without ``stream``."""
    params = request.params
    body: JSON = {
        "model": model,
        "max_tokens": params.max_tokens or default_max_tokens or DEFAULT_MAX_TOKENS,
        "messages": format_messages(request.messages),
    }
    system = "\n\n".join(m.content for m in request.messages if isinstance(m, SystemMessage))
    if system:
        body["system"] = system
    if request.tools:
        body["tools"] = [format_tool(t) for t in request.tools]
        choice = _tool_choice(request)
        if choice is not None:
            body["tool_choice"] = choice
    optional: JSON = {
        "stop_sequences": list(params.stop) or None,
        "metadata": {"user_id": params.user} if params.user else None,
    }
    body.update({k: v for k, v in optional.items() if v is not None})
    # The API still takes these; the SDK no longer has arguments for them.
    sampling = {"temperature": params.temperature, "top_p": params.top_p}
    sampling = {k: v for k, v in sampling.items() if v is not None}
    if sampling:
        body["extra_body"] = sampling
    return body


def format_tool(tool: ToolSpec) -> JSON:
    return {
        "name": tool.name,
        "description": tool.description,
        "input_schema": anthropic_input_schema(tool.parameters),
    }


def _tool_choice(request: ChatRequest) -> JSON | None:
    choice = request.tool_choice
    if choice == "none":
        return {"type": "none"}
    wire: JSON
    if isinstance(choice, NamedToolChoice):
        wire = {"type": "tool", "name": choice.name}
    elif choice == "required":
        wire = {"type": "any"}
    elif choice == "auto" or request.parallel_tool_calls is False:
        wire = {"type": "auto"}
    else:
        return None
    if request.parallel_tool_calls is False:
        wire["disable_parallel_tool_use"] = True
    return wire


def format_messages(messages: tuple[Message, ...]) -> list[JSON]:
    """User/assistant turns; tool results of one turn open the next user message, before text."""
    wire: list[JSON] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            continue
        role = "assistant" if isinstance(message, AssistantMessage) else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})
    for turn in wire:
        if turn["role"] == "user":
            # A user turn may have merged text before results (text, then tool message): the
            # API wants every tool_result first.
            turn["content"].sort(key=lambda block: block["type"] != "tool_result")
    return wire


def _blocks(message: Message) -> list[JSON]:
    match message:
        case UserMessage(content=str() as text):
            return [{"type": "text", "text": text}] if text else []
        case UserMessage(content=parts):
            assert not isinstance(parts, str)
            return [_part(p) for p in parts]
        case AssistantMessage():
            return _assistant_blocks(message)
        case ToolResultMessage():
            block: JSON = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": message.content,
            }
            if message.is_error:
                block["is_error"] = True
            return [block]
    return []


def _part(part: TextPart | ImagePart) -> JSON:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if part.url.startswith("data:"):
        header, _, data = part.url.partition(",")
        media_type = header.removeprefix("data:").split(";", 1)[0]
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": data},
        }
    return {"type": "image", "source": {"type": "url", "url": part.url}}


def _assistant_blocks(message: AssistantMessage) -> list[JSON]:
    blocks = [b for b in (_thinking_block(t) for t in message.thinking) if b is not None]
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    blocks.extend(
        {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
        for call in message.tool_calls
    )
    return blocks


def _thinking_block(thinking: Thinking) -> JSON | None:
    if thinking.redacted:
        return {"type": "redacted_thinking", "data": thinking.text}
    if thinking.signature:
        return {"type": "thinking", "thinking": thinking.text, "signature": thinking.signature}
    # Unsigned reasoning (from another provider) would be rejected: it stays out of history.
    return None
