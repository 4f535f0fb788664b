"""Anthropic Messages wire format <-> canonical types, for the inbound Messages API."""

from __future__ import annotations

from collections.abc import Iterator

from gateway.anthropic_api.schemas import (
    AssistantMessageIn,
    Base64ImageSource,
    CacheControlIn,
    CountTokensRequest,
    ImageBlock,
    MessageIn,
    MessagesRequest,
    OutputConfig,
    RedactedThinkingBlock,
    SystemMessageIn,
    TextBlock,
    ThinkingBlock,
    ThinkingDisabled,
    ThinkingEnabled,
    ThinkingIn,
    ToolChoiceAny,
    ToolChoiceAuto,
    ToolChoiceIn,
    ToolChoiceTool,
    ToolResultBlock,
    ToolUseBlock,
    UserMessageIn,
)
from llm_service.types import (
    JSON,
    AssistantMessage,
    CacheControl,
    ChatRequest,
    ChatResponse,
    ContentPart,
    FinishReason,
    ImagePart,
    Message,
    NamedToolChoice,
    Reasoning,
    ReasoningEffort,
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

STOP_REASONS: dict[FinishReason, str] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
}


def to_chat_request(body: MessagesRequest) -> ChatRequest:
    tool_choice, parallel = _tool_choice(body.tool_choice)
    return ChatRequest(
        messages=_conversation(body),
        tools=_tools(body),
        tool_choice=tool_choice,
        parallel_tool_calls=parallel,
        params=SamplingParams(
            temperature=body.temperature,
            top_p=body.top_p,
            max_tokens=body.max_tokens,
            stop=tuple(body.stop_sequences or ()),
            user=body.metadata.user_id if body.metadata else None,
            reasoning=_reasoning(body.thinking, body.output_config),
        ),
        cache_control=_cache(body.cache_control),
    )


def counted_request(body: CountTokensRequest) -> ChatRequest:
    """What ``/v1/messages/count_tokens`` counts: the conversation and its tools."""
    return ChatRequest(messages=_conversation(body), tools=_tools(body))


def _conversation(body: CountTokensRequest) -> tuple[Message, ...]:
    messages = tuple(converted for message in body.messages for converted in _messages(message))
    return _system(body.system) + messages


def _tools(body: CountTokensRequest) -> tuple[ToolSpec, ...]:
    return tuple(
        ToolSpec(
            name=t.name,
            description=t.description or "",
            parameters=t.input_schema,
            cache_control=_cache(t.cache_control),
        )
        for t in body.tools or ()
        if not t.defer_loading
    )


def _cache(cache: CacheControlIn | None) -> CacheControl | None:
    return None if cache is None else CacheControl(cache.type, cache.ttl)


def _reasoning(thinking: ThinkingIn | None, output: OutputConfig | None) -> Reasoning | None:
    """``thinking`` and ``output_config.effort`` as one request: an effort reaches OpenAI models
    as their ``reasoning_effort`` (Anthropic's ``max`` is OpenAI's ``xhigh``)."""
    effort = None if output is None else output.effort
    wire_effort: ReasoningEffort | None = "xhigh" if effort == "max" else effort
    if isinstance(thinking, ThinkingDisabled) or (thinking is None and wire_effort is None):
        return None
    if isinstance(thinking, ThinkingEnabled):
        return Reasoning(effort=wire_effort, budget_tokens=thinking.budget_tokens)
    # Adaptive, or an effort alone; without an effort the model decides how much.
    return Reasoning(effort=wire_effort)


def _system(system: str | list[TextBlock] | None) -> tuple[Message, ...]:
    """One system message, or one per block when a block carries a cache breakpoint."""
    if not system:
        return ()
    if isinstance(system, str):
        return (SystemMessage(system),)
    if any(block.cache_control for block in system):
        return tuple(SystemMessage(b.text, cache_control=_cache(b.cache_control)) for b in system)
    return (SystemMessage("\n\n".join(block.text for block in system)),)


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


def _messages(message: MessageIn) -> Iterator[Message]:
    if isinstance(message, AssistantMessageIn):
        yield _assistant(message)
        return
    if isinstance(message, SystemMessageIn):
        # Kept in its place: providers that take system messages only up front (Anthropic's
        # without the beta) get them gathered by their adapter.
        yield from _system(message.content)
        return
    assert isinstance(message, UserMessageIn)
    if isinstance(message.content, str):
        yield UserMessage(message.content)
        return
    # Tool results answer the previous assistant turn, so they come before the user's own words
    # (as Anthropic requires them to); every other provider wants them as separate messages.
    parts: list[ContentPart] = []
    for block in message.content:
        if isinstance(block, ToolResultBlock):
            yield _tool_result(block)
        else:
            parts.append(_part(block))
    if parts:
        yield UserMessage(tuple(parts))


def _tool_result(block: ToolResultBlock) -> ToolResultMessage:
    cache = block.cache_control
    content: str | tuple[ContentPart, ...] = ""
    if isinstance(block.content, str):
        content = block.content
    elif block.content:
        # A breakpoint inside the result covers the result: it is its last part.
        cache = cache or next((i.cache_control for i in block.content if i.cache_control), None)
        content = tuple(
            _part(item.model_copy(update={"cache_control": None})) for item in block.content
        )
    return ToolResultMessage(
        block.tool_use_id, content, is_error=bool(block.is_error), cache_control=_cache(cache)
    )


def _part(block: TextBlock | ImageBlock) -> ContentPart:
    cache = _cache(block.cache_control)
    if isinstance(block, TextBlock):
        return TextPart(block.text, cache_control=cache)
    source = block.source
    if isinstance(source, Base64ImageSource):
        return ImagePart(f"data:{source.media_type};base64,{source.data}", cache_control=cache)
    return ImagePart(source.url, cache_control=cache)


def _assistant(message: AssistantMessageIn) -> AssistantMessage:
    if isinstance(message.content, str):
        return AssistantMessage(content=message.content or None)
    text: list[str] = []
    calls: list[ToolCall] = []
    thinking: list[Thinking] = []
    cache: CacheControlIn | None = None
    for block in message.content:
        match block:
            case TextBlock():
                text.append(block.text)
                cache = block.cache_control or cache
            case ToolUseBlock():
                calls.append(
                    ToolCall(
                        block.id, block.name, block.input, cache_control=_cache(block.cache_control)
                    )
                )
            case ThinkingBlock():
                thinking.append(Thinking(block.thinking, block.signature))
            case RedactedThinkingBlock():
                # The opaque payload travels in ``text``; only Anthropic can read it back.
                thinking.append(Thinking(block.data, redacted=True))
    return AssistantMessage(
        content="".join(text) or None,
        tool_calls=tuple(calls),
        thinking=tuple(thinking),
        cache_control=_cache(cache),
    )


def thinking_json(thinking: Thinking) -> JSON:
    if thinking.redacted:
        return {"type": "redacted_thinking", "data": thinking.text}
    return {"type": "thinking", "thinking": thinking.text, "signature": thinking.signature or ""}


def tool_use_json(call: ToolCall) -> JSON:
    return {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}


def usage_json(usage: Usage) -> JSON:
    """Anthropic counts cache reads and writes apart from ``input_tokens``."""
    return {
        "input_tokens": usage.prompt_tokens - usage.cached_tokens - usage.cache_write_tokens,
        "output_tokens": usage.completion_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_input_tokens": usage.cached_tokens,
    }


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
