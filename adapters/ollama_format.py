"""Canonical messages and tools in Ollama's ``/api/chat`` wire format.

Arguments travel as JSON objects (not strings) both ways, and a tool result names its tool
(``tool_name``) rather than a call id.
"""

from __future__ import annotations

from adapters.reasoning import effort_of, is_off
from adapters.schemas import ollama_parameters
from adapters.tool_results import ERROR_PREFIX
from llm_service.types import (
    JSON,
    AssistantMessage,
    ChatRequest,
    ImagePart,
    Message,
    NamedToolChoice,
    Reasoning,
    ResponseFormat,
    SystemMessage,
    TextPart,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)


def request_body(request: ChatRequest, model: str, default_max_tokens: int | None) -> JSON:
    """The JSON body of ``POST /api/chat``, without ``stream``."""
    body: JSON = {"model": model, "messages": format_messages(request.messages)}
    tools = _offered_tools(request)
    if tools:
        body["tools"] = [format_tool(t) for t in tools]
        instruction = _choice_instruction(request)
        if instruction:
            body["messages"].insert(0, {"role": "system", "content": instruction})
    params = request.params
    options: JSON = {
        "temperature": params.temperature,
        "top_p": params.top_p,
        "num_predict": params.max_tokens or default_max_tokens,
        "stop": list(params.stop) or None,
        "seed": params.seed,
        "presence_penalty": params.presence_penalty,
        "frequency_penalty": params.frequency_penalty,
    }
    options = {k: v for k, v in options.items() if v is not None}
    if options:
        body["options"] = options
    response_format = _format(params.response_format)
    if response_format is not None:
        body["format"] = response_format
    if params.reasoning is not None:
        body["think"] = _think(params.reasoning, model)
    return body


def _think(reasoning: Reasoning, model: str) -> bool | str:
    """``think``: a level for the models that take one (gpt-oss), else on or off."""
    if is_off(reasoning):
        return False
    effort = effort_of(reasoning)
    if model.startswith("gpt-oss") and effort is not None:
        return {"minimal": "low", "xhigh": "high"}.get(effort, effort)
    return True


def _offered_tools(request: ChatRequest) -> tuple[ToolSpec, ...]:
    """Ollama has no tool_choice: "none" offers no tools, a named choice offers only that one."""
    choice = request.tool_choice
    if choice == "none":
        return ()
    if isinstance(choice, NamedToolChoice):
        return tuple(t for t in request.tools if t.name == choice.name)
    return request.tools


def _choice_instruction(request: ChatRequest) -> str | None:
    """Ollama cannot force a call: a required or named choice is asked for in words."""
    choice = request.tool_choice
    if choice == "required":
        return "You must call at least one of the tools."
    if isinstance(choice, NamedToolChoice):
        return f"You must call the tool `{choice.name}`."
    return None


def _format(response_format: ResponseFormat | None) -> str | JSON | None:
    if response_format is None or response_format.type == "text":
        return None
    if response_format.type == "json_schema" and response_format.schema is not None:
        return response_format.schema
    return "json"


def format_tool(tool: ToolSpec) -> JSON:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": ollama_parameters(tool.parameters),
        },
    }


def format_messages(messages: tuple[Message, ...]) -> list[JSON]:
    # A tool result names its tool; canonical results may only carry the call id.
    names = {
        call.id: call.name
        for message in messages
        if isinstance(message, AssistantMessage)
        for call in message.tool_calls
    }
    return [_message(m, names) for m in messages]


def _message(message: Message, names: dict[str, str]) -> JSON:
    match message:
        case SystemMessage(content=content):
            return {"role": "system", "content": content}
        case UserMessage(content=str() as text):
            return {"role": "user", "content": text}
        case UserMessage(content=parts):
            assert not isinstance(parts, str)
            return _user_parts(parts)
        case AssistantMessage():
            return _assistant(message)
        case ToolResultMessage():
            return _tool_result(message, names)
    raise TypeError(f"not a message: {message!r}")


def _tool_result(result: ToolResultMessage, names: dict[str, str]) -> JSON:
    """Ollama reads ``images`` on any message, a tool's included; it has no error flag."""
    wire = _parts_wire("tool", (TextPart(result.text), *result.images))
    if result.is_error:
        text = wire["content"]
        wire["content"] = f"{ERROR_PREFIX}{text}" if text else ERROR_PREFIX.strip()
    wire["tool_name"] = result.name or names.get(result.tool_call_id, "")
    return wire


def _user_parts(parts: tuple[TextPart | ImagePart, ...]) -> JSON:
    return _parts_wire("user", parts)


def _parts_wire(role: str, parts: tuple[TextPart | ImagePart, ...]) -> JSON:
    texts: list[str] = []
    images: list[str] = []
    for part in parts:
        if isinstance(part, TextPart):
            texts.append(part.text)
        elif part.url.startswith("data:"):
            images.append(part.url.partition(",")[2])  # Ollama takes bare base64
        else:
            texts.append(part.url)  # Ollama cannot fetch URLs: the model at least sees it
    wire: JSON = {"role": role, "content": "\n".join(t for t in texts if t)}
    if images:
        wire["images"] = images
    return wire


def _assistant(message: AssistantMessage) -> JSON:
    wire: JSON = {"role": "assistant", "content": message.content or ""}
    thinking = "".join(t.text for t in message.thinking if not t.redacted)
    if thinking:
        wire["thinking"] = thinking
    if message.tool_calls:
        wire["tool_calls"] = [
            {"function": {"name": call.name, "arguments": call.arguments}}
            for call in message.tool_calls
        ]
    return wire
