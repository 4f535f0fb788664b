"""Responses API items <-> canonical types, for every provider that does not serve the Responses
API itself (``passthrough.py`` is the other way).

A model's thinking is returned as reasoning items and read back from them (``reasoning.py``);
reasoning items of other origins (OpenAI's encrypted reasoning) are ignored input
(docs/responses-api.md).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from gateway.responses_api.reasoning import reasoning_item, thinking_of
from gateway.responses_api.schemas import FunctionToolChoice, ResponsesRequest
from llm_service.assemble import arguments_json, tool_call
from llm_service.errors import InvalidRequest
from llm_service.types import (
    JSON,
    AssistantMessage,
    ChatResponse,
    ContentPart,
    ImagePart,
    Message,
    NamedToolChoice,
    ResponseFormat,
    SystemMessage,
    TextPart,
    Thinking,
    ToolChoice,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)

_EMPTY_OBJECT_SCHEMA: JSON = {"type": "object", "properties": {}}
_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})
# A namespace's tool as the model sees it: ``multi_agent__spawn_agent``.
NAMESPACE_JOIN = "__"


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(24)}"


def tool_specs(body: ResponsesRequest, mapped: dict[int, ToolSpec | None]) -> tuple[ToolSpec, ...]:
    """The request's tools; ``mapped`` holds the MCP tool each built-in one stands for
    (``builtin_tools.py``; None: not offered). A namespace's tools are offered under their
    joined names (``namespace__name``), and calls to them come back split (``namespaces``)."""
    specs: list[ToolSpec] = []
    for index, tool in enumerate(body.tools or ()):
        where = f"tools[{index}]"
        if index in mapped:
            spec = mapped[index]
            specs.extend(() if spec is None else (spec,))
        elif tool.get("type") == "namespace":
            specs.extend(_namespace_specs(tool, where))
        else:
            specs.append(_function_spec(tool, where))
    names = [spec.name for spec in specs]
    for name in names:
        if names.count(name) > 1:
            raise InvalidRequest(f"Two tools are named `{name}`.", param="tools")
    return tuple(specs)


def _function_spec(tool: JSON, where: str) -> ToolSpec:
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidRequest("A function tool needs a `name`.", param=f"{where}.name")
    parameters = tool.get("parameters")
    if not isinstance(parameters, dict):
        parameters = dict(_EMPTY_OBJECT_SCHEMA)
    return ToolSpec(
        name=name, description=str(tool.get("description") or ""), parameters=parameters
    )


def _namespace_specs(tool: JSON, where: str) -> list[ToolSpec]:
    namespace = _required_str(tool, "name", where)
    members = tool.get("tools")
    if not isinstance(members, list):
        raise InvalidRequest("A namespace lists its `tools`.", param=f"{where}.tools")
    specs = []
    for index, member in enumerate(members):
        at = f"{where}.tools[{index}]"
        if not isinstance(member, dict) or member.get("type", "function") != "function":
            raise InvalidRequest("A namespace groups `function` tools.", param=at)
        spec = _function_spec(member, at)
        specs.append(replace(spec, name=joined_name(namespace, spec.name)))
    return specs


def joined_name(namespace: str | None, name: str) -> str:
    return name if namespace is None else f"{namespace}{NAMESPACE_JOIN}{name}"


def namespaces(body: ResponsesRequest) -> dict[str, tuple[str, str]]:
    """Each namespaced tool's joined name -> its namespace and its own name."""
    split: dict[str, tuple[str, str]] = {}
    for tool in body.tools or ():
        namespace = tool.get("name")
        if tool.get("type") != "namespace" or not isinstance(namespace, str):
            continue
        for member in tool.get("tools") or ():
            if isinstance(member, dict) and isinstance(name := member.get("name"), str):
                split[joined_name(namespace, name)] = (namespace, name)
    return split


def response_format(body: ResponsesRequest) -> ResponseFormat | None:
    """``text.format`` as the canonical response format."""
    chosen = body.text.format if body.text is not None else None
    if chosen is None or chosen.type == "text":
        return None
    if chosen.type == "json_object":
        return ResponseFormat("json_object")
    return ResponseFormat(
        "json_schema",
        schema=chosen.json_schema,
        name=chosen.name,
        strict=chosen.strict,
        description=chosen.description,
    )


def tool_choice(body: ResponsesRequest) -> ToolChoice | None:
    if isinstance(body.tool_choice, FunctionToolChoice):
        return NamedToolChoice(body.tool_choice.name)
    return body.tool_choice


def input_messages(body: ResponsesRequest) -> list[Message]:
    """The request's ``input`` as canonical messages (``instructions`` are not among them)."""
    if isinstance(body.input, str):
        return [UserMessage(body.input)]
    reader = _ItemReader()
    for index, item in enumerate(body.input):
        reader.read(item, f"input[{index}]")
    return reader.messages


class _ItemReader:
    """Input items in order; a function call joins the assistant message just before it, as
    canonical history keeps an assistant turn's text and calls in one message."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self._tool_names: dict[str, str] = {}
        self._thinking: list[Thinking] = []  # for the assistant turn that follows

    def read(self, item: JSON, where: str) -> None:
        kind = item.get("type", "message")
        if kind == "message":
            message = _message(item, where)
            if isinstance(message, AssistantMessage) and self._thinking:
                message = AssistantMessage(content=message.content, thinking=self._taken())
            self.messages.append(message)
        elif kind == "reasoning":
            thinking = thinking_of(item)
            if thinking is not None:
                self._thinking.append(thinking)
        elif kind == "function_call":
            self._call(item, where)
        elif kind == "function_call_output":
            call_id = _required_str(item, "call_id", where)
            output = _output(item.get("output"), f"{where}.output")
            name = self._tool_names.get(call_id)
            self.messages.append(ToolResultMessage(call_id, output, name=name))
        else:
            raise InvalidRequest(
                f"The input item type `{kind}` is not supported by this gateway: send messages, "
                "`function_call` and `function_call_output` items.",
                param=where,
            )

    def _call(self, item: JSON, where: str) -> None:
        call_id = _required_str(item, "call_id", where)
        namespace = item.get("namespace")
        name = _required_str(item, "name", where)
        name = joined_name(namespace if isinstance(namespace, str) else None, name)
        arguments = item.get("arguments", "")
        call = tool_call(call_id, name, arguments if isinstance(arguments, str) else "")
        self._tool_names[call_id] = name
        last = self.messages[-1] if self.messages else None
        if isinstance(last, AssistantMessage):
            self.messages[-1] = AssistantMessage(
                content=last.content,
                tool_calls=(*last.tool_calls, call),
                thinking=(*last.thinking, *self._taken()),
            )
        else:
            self.messages.append(AssistantMessage(tool_calls=(call,), thinking=self._taken()))

    def _taken(self) -> tuple[Thinking, ...]:
        thinking, self._thinking = tuple(self._thinking), []
        return thinking


def _required_str(item: JSON, field: str, where: str) -> str:
    value = item.get(field)
    if not isinstance(value, str) or not value:
        raise InvalidRequest(f"`{field}` is required.", param=f"{where}.{field}")
    return value


def _message(item: JSON, where: str) -> Message:
    role = item.get("role")
    content = item.get("content")
    if role in ("system", "developer"):
        return SystemMessage(_text_of(content, f"{where}.content"))
    if role == "assistant":
        return AssistantMessage(content=_text_of(content, f"{where}.content") or None)
    if role == "user":
        if isinstance(content, str):
            return UserMessage(content)
        return UserMessage(_user_parts(content, f"{where}.content"))
    raise InvalidRequest(
        "A message's `role` is one of user, assistant, system, developer.", param=f"{where}.role"
    )


def _parts(content: Any, where: str) -> list[JSON]:
    if not isinstance(content, list) or not all(isinstance(p, dict) for p in content):
        raise InvalidRequest("Content is a string or a list of content parts.", param=where)
    return content


def _text_of(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    texts = []
    for index, part in enumerate(_parts(content, where)):
        if part.get("type") not in _TEXT_PARTS and part.get("type") != "refusal":
            raise InvalidRequest(
                f"Only text content is supported here, not `{part.get('type')}`.",
                param=f"{where}[{index}]",
            )
        texts.append(str(part.get("text", part.get("refusal", ""))))
    return "".join(texts)


def _output(output: Any, where: str) -> str | tuple[ContentPart, ...]:
    """A function's output: text, or input_text and input_image parts (as the SDK allows)."""
    return output if isinstance(output, str) else _user_parts(output, where)


def _user_parts(content: Any, where: str) -> tuple[ContentPart, ...]:
    parts: list[ContentPart] = []
    for index, part in enumerate(_parts(content, where)):
        kind = part.get("type")
        if kind in _TEXT_PARTS:
            parts.append(TextPart(str(part.get("text", ""))))
        elif kind == "input_image" and isinstance(part.get("image_url"), str):
            parts.append(ImagePart(part["image_url"], part.get("detail")))
        else:
            raise InvalidRequest(
                f"The content part `{kind}` is not supported by this gateway: send input_text, "
                "or input_image with an image_url.",
                param=f"{where}[{index}]",
            )
    return tuple(parts)


def usage_json(usage: Usage) -> JSON:
    return {
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {
            "cached_tokens": usage.cached_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
        },
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.total_tokens,
    }


def message_item(item_id: str, text: str, status: str = "completed") -> JSON:
    return {
        "id": item_id,
        "type": "message",
        "role": "assistant",
        "status": status,
        "content": [output_text_part(text)] if status == "completed" else [],
    }


def output_text_part(text: str) -> JSON:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def function_call_item(
    item_id: str,
    call_id: str,
    name: str,
    arguments: str,
    status: str = "completed",
    *,
    split: Mapping[str, tuple[str, str]] | None = None,
) -> JSON:
    """A call item; ``split`` names a namespaced tool's call as the caller declared it."""
    namespace, own_name = (split or {}).get(name, (None, name))
    item = {
        "id": item_id,
        "type": "function_call",
        "call_id": call_id,
        "name": own_name,
        "arguments": arguments,
        "status": status,
    }
    return item if namespace is None else {**item, "namespace": namespace}


def output_items(response: ChatResponse, body: ResponsesRequest) -> list[JSON]:
    items = [reasoning_item(new_id("rs"), t) for t in response.message.thinking]
    if response.message.content:
        items.append(message_item(new_id("msg"), response.message.content))
    split = namespaces(body)
    for call in response.message.tool_calls:
        arguments = arguments_json(call)
        items.append(function_call_item(new_id("fc"), call.id, call.name, arguments, split=split))
    return items


def response_json(
    response_id: str,
    body: ResponsesRequest,
    *,
    status: str = "completed",
    output: list[JSON] | None = None,
    usage: Usage | None = None,
    incomplete: bool = False,
) -> JSON:
    """A Response object; ``in_progress`` ones (stream start) have no output or usage yet."""
    choice: Any = body.tool_choice or "auto"
    if isinstance(choice, FunctionToolChoice):
        choice = {"type": "function", "name": choice.name}
    return {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": "incomplete" if incomplete else status,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "instructions": body.instructions,
        "max_output_tokens": body.max_output_tokens,
        "model": body.model,
        "output": output or [],
        "parallel_tool_calls": body.parallel_tool_calls is not False,
        "previous_response_id": body.previous_response_id,
        "temperature": body.temperature,
        "top_p": body.top_p,
        "tool_choice": choice,
        "tools": body.tools or [],
        "metadata": body.metadata or {},
        "store": body.store,
        "text": body.echoed("text") or {"format": {"type": "text"}},
        "truncation": "disabled",
        "usage": usage_json(usage) if usage is not None else None,
        "user": body.user,
    }


def whole_response_json(response: ChatResponse, response_id: str, body: ResponsesRequest) -> JSON:
    return response_json(
        response_id,
        body,
        output=output_items(response, body),
        usage=response.usage,
        incomplete=response.finish_reason == "length",
    )


def output_messages(output: list[JSON]) -> list[Message]:
    """The canonical assistant message a response's output items make (for stored history)."""
    text = "".join(
        str(part.get("text", ""))
        for item in output
        if item.get("type") == "message"
        for part in item.get("content") or ()
    )
    calls = tuple(
        tool_call(
            item["call_id"], joined_name(item.get("namespace"), item["name"]), item["arguments"]
        )
        for item in output
        if item.get("type") == "function_call"
    )
    read = (thinking_of(item) for item in output if item.get("type") == "reasoning")
    thinking = tuple(t for t in read if t is not None)
    if not text and not calls:
        return []
    return [AssistantMessage(content=text or None, tool_calls=calls, thinking=thinking)]
