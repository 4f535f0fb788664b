"""Canonical messages and tools in the Anthropic Messages wire format."""

from __future__ import annotations

from adapters.reasoning import MIN_BUDGET, budget_of, is_off
from adapters.schemas import anthropic_input_schema
from llm_service.errors import InvalidRequest
from llm_service.types import (
    JSON,
    AssistantMessage,
    CacheControl,
    ChatRequest,
    ImagePart,
    Message,
    NamedToolChoice,
    SamplingParams,
    SystemMessage,
    TextPart,
    Thinking,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)

# The Messages API requires max_tokens; this is used when neither caller nor config sets one.
DEFAULT_MAX_TOKENS = 4096


def request_body(request: ChatRequest, model: str, default_max_tokens: int | None) -> JSON:
    """The keyword arguments of ``messages.create``, without ``stream``.

    Raises ``InvalidRequest`` for what Anthropic cannot do (docs/providers.md).
    """
    params = request.params
    _refuse_unsupported(params)
    max_tokens = params.max_tokens or default_max_tokens or DEFAULT_MAX_TOKENS
    body: JSON = {
        "model": model,
        "max_tokens": max_tokens,
        "messages": format_messages(request.messages, model),
    }
    system = _system(request.messages)
    if system:
        body["system"] = system
    if request.tools:
        body["tools"] = [format_tool(t) for t in request.tools]
        choice = _tool_choice(request)
        if choice is not None:
            body["tool_choice"] = choice
    thinking = _thinking(request, body, max_tokens)
    cache = request.cache_control
    if cache is None and params.prompt_cache_key:
        # OpenAI caches on its own and the key only routes; Anthropic caches what it is asked
        # to: the caller wants caching, so the prompt is cached up to its last part.
        cache = CacheControl()
    optional: JSON = {
        "stop_sequences": list(params.stop) or None,
        "metadata": {"user_id": params.user} if params.user else None,
        "thinking": thinking,
        "cache_control": _cache(cache),
        "output_config": _output_config(params),
    }
    body.update({k: v for k, v in optional.items() if v is not None})
    # The API still takes these; the SDK no longer has arguments for them.
    sampling = {"temperature": params.temperature, "top_p": params.top_p}
    sampling = {k: v for k, v in sampling.items() if v is not None}
    if sampling:
        body["extra_body"] = sampling
    return body


def _refuse_unsupported(params: SamplingParams) -> None:
    if params.seed is not None:
        raise InvalidRequest("Anthropic models do not take a `seed`.", param="seed")
    fmt = params.response_format
    if fmt is not None and fmt.type == "json_object":
        raise InvalidRequest(
            "Anthropic models take `response_format` of type `json_schema` only: give a schema.",
            param="response_format",
        )


def _output_config(params: SamplingParams) -> JSON | None:
    fmt = params.response_format
    if fmt is None or fmt.type != "json_schema":
        return None
    # Anthropic's structured outputs: the answer's text is JSON valid against the schema.
    return {"format": {"type": "json_schema", "schema": fmt.schema or {"type": "object"}}}


def _thinking(request: ChatRequest, body: JSON, max_tokens: int) -> JSON | None:
    reasoning = request.params.reasoning
    if reasoning is None or is_off(reasoning):
        return None
    if not _loop_keeps_thinking(body["messages"]):
        # A tool loop begun by another model (or without thinking) has no signed thinking to
        # open its turn with, which Anthropic requires: the model answers this one without.
        return None
    if request.tools and (
        request.tool_choice == "required" or isinstance(request.tool_choice, NamedToolChoice)
    ):
        raise InvalidRequest(
            "Anthropic models cannot think while a tool is forced: use `tool_choice` auto or "
            "none, or turn thinking off.",
            param="tool_choice",
        )
    budget = budget_of(reasoning)
    if budget is None:
        return {"type": "adaptive"}
    if reasoning.budget_tokens is None:
        # An effort's budget counts within max_tokens, as OpenAI's reasoning tokens do.
        budget = min(budget, max_tokens - 1)
        if budget < MIN_BUDGET:
            raise InvalidRequest(
                f"Reasoning on Anthropic models needs `max_tokens` above {MIN_BUDGET}.",
                param="max_tokens",
            )
    return {"type": "enabled", "budget_tokens": budget}


def _loop_keeps_thinking(messages: list[JSON]) -> bool:
    """False when the turn a tool loop continues has tool calls but no thinking block."""
    if len(messages) < 2 or messages[-2]["role"] != "assistant":
        return True
    types = [block["type"] for block in messages[-2]["content"]]
    return "tool_use" not in types or types[0] in ("thinking", "redacted_thinking")


def _cache(cache: CacheControl | None) -> JSON | None:
    if cache is None:
        return None
    wire: JSON = {"type": cache.type}
    if cache.ttl is not None:
        wire["ttl"] = cache.ttl
    return wire


def _cached(block: JSON, cache: CacheControl | None) -> JSON:
    wire = _cache(cache)
    if wire is not None:
        block["cache_control"] = wire
    return block


def _system(messages: tuple[Message, ...]) -> str | list[JSON]:
    """One string, or text blocks when a block carries a cache breakpoint."""
    system = [m for m in messages if isinstance(m, SystemMessage)]
    if any(m.cache_control for m in system):
        return [
            _cached({"type": "text", "text": m.content}, m.cache_control)
            for m in system
            if m.content
        ]
    return "\n\n".join(m.content for m in system)


def format_tool(tool: ToolSpec) -> JSON:
    wire = {
        "name": tool.name,
        "description": tool.description,
        "input_schema": anthropic_input_schema(tool.parameters),
    }
    return _cached(wire, tool.cache_control)


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


def format_messages(messages: tuple[Message, ...], model: str) -> list[JSON]:
    """User/assistant turns; tool results of one turn open the next user message, before text."""
    wire: list[JSON] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            continue
        role = "assistant" if isinstance(message, AssistantMessage) else "user"
        blocks = _blocks(message, model)
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


def _blocks(message: Message, model: str) -> list[JSON]:
    match message:
        case UserMessage(content=str() as text):
            return [{"type": "text", "text": text}] if text else []
        case UserMessage(content=parts):
            assert not isinstance(parts, str)
            return [_part(p) for p in parts if not (isinstance(p, TextPart) and not p.text)]
        case AssistantMessage():
            return _assistant_blocks(message, model)
        case ToolResultMessage():
            block: JSON = {"type": "tool_result", "tool_use_id": message.tool_call_id}
            content = _result_content(message)
            if content:  # an empty text block is refused; no content is not
                block["content"] = content
            if message.is_error:
                block["is_error"] = True
            return [_cached(block, message.cache_control)]
    return []


def _result_content(result: ToolResultMessage) -> str | list[JSON]:
    if isinstance(result.content, str):
        return result.content
    return [_part(p) for p in result.content if not (isinstance(p, TextPart) and not p.text)]


def _part(part: TextPart | ImagePart) -> JSON:
    if isinstance(part, TextPart):
        return _cached({"type": "text", "text": part.text}, part.cache_control)
    source: JSON = {"type": "url", "url": part.url}
    if part.url.startswith("data:"):
        header, _, data = part.url.partition(",")
        media_type = header.removeprefix("data:").split(";", 1)[0]
        source = {"type": "base64", "media_type": media_type, "data": data}
    return _cached({"type": "image", "source": source}, part.cache_control)


def _assistant_blocks(message: AssistantMessage, model: str) -> list[JSON]:
    blocks = [b for b in (_thinking_block(t, model) for t in message.thinking) if b is not None]
    if message.content:
        blocks.append(_cached({"type": "text", "text": message.content}, message.cache_control))
    blocks.extend(
        _cached(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments},
            call.cache_control,
        )
        for call in message.tool_calls
    )
    return blocks


def _thinking_block(thinking: Thinking, model: str) -> JSON | None:
    if thinking.model is not None and thinking.model != model:
        # Signed by another model: its signature would not verify here.
        return None
    if thinking.redacted:
        return {"type": "redacted_thinking", "data": thinking.text}
    if thinking.signature:
        return {"type": "thinking", "thinking": thinking.text, "signature": thinking.signature}
    # Unsigned reasoning (from another provider) would be rejected: it stays out of history.
    return None
