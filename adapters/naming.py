"""Tool names and tool-call ids as each provider accepts them, rewritten deterministically.

Deterministic rewriting is what lets a conversation move between providers: the same canonical
id always becomes the same wire id, so an assistant's call and the tool result answering it
still match after both were rewritten, with no state kept between requests.
"""

from __future__ import annotations

import hashlib
import re
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Literal

from llm_service.types import (
    AssistantMessage,
    ChatRequest,
    Message,
    NamedToolChoice,
    ToolResultMessage,
)

IdStyle = Literal["openai", "anthropic", "mistral"]

_NAME_OK = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_NAME_BAD_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME = 64
_ANTHROPIC_ID_OK = re.compile(r"^[A-Za-z0-9_-]+$")
_MISTRAL_ID_OK = re.compile(r"^[A-Za-z0-9]{9}$")
_OPENAI_MAX_ID = 40
_ALPHANUMERIC = string.ascii_letters + string.digits


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode()).digest()


def _hex(value: str, length: int) -> str:
    return _digest(value).hex()[:length]


def wire_tool_name(name: str) -> str:
    """``name`` if every provider accepts it; otherwise a stable look-alike with a hash suffix."""
    if _NAME_OK.match(name):
        return name
    cleaned = _NAME_BAD_CHARS.sub("_", name) or "tool"
    return f"{cleaned[: _MAX_NAME - 9]}_{_hex(name, 8)}"


@dataclass(frozen=True, slots=True)
class ToolNames:
    """The canonical <-> wire tool names of one request."""

    to_wire: Mapping[str, str]
    to_canonical: Mapping[str, str]

    @classmethod
    def of(cls, names: Iterable[str]) -> ToolNames:
        forward = {name: wire_tool_name(name) for name in names}
        return cls(forward, {wire: name for name, wire in forward.items()})

    def wire(self, name: str) -> str:
        return self.to_wire.get(name) or wire_tool_name(name)

    def canonical(self, wire_name: str) -> str:
        return self.to_canonical.get(wire_name, wire_name)


def wire_call_id(call_id: str, style: IdStyle) -> str:
    """A tool-call id the target accepts; ids it already accepts pass unchanged."""
    if style == "openai":
        if 0 < len(call_id) <= _OPENAI_MAX_ID:
            return call_id
        return f"call_{_hex(call_id, 32)}"
    if style == "anthropic":
        if _ANTHROPIC_ID_OK.match(call_id):
            return call_id
        return f"toolu_{_hex(call_id, 24)}"
    if _MISTRAL_ID_OK.match(call_id):
        return call_id
    return "".join(_ALPHANUMERIC[b % len(_ALPHANUMERIC)] for b in _digest(call_id)[:9])


def request_names(request: ChatRequest) -> ToolNames:
    """Names offered now and names already used in the history (tools may have been removed)."""
    names: list[str] = [tool.name for tool in request.tools]
    for message in request.messages:
        if isinstance(message, AssistantMessage):
            names.extend(call.name for call in message.tool_calls)
    return ToolNames.of(names)


def for_wire(request: ChatRequest, names: ToolNames, style: IdStyle | None) -> ChatRequest:
    """The request with tool names (and, given a style, call ids) the provider accepts."""
    tools = tuple(replace(tool, name=names.wire(tool.name)) for tool in request.tools)
    choice = request.tool_choice
    if isinstance(choice, NamedToolChoice):
        choice = NamedToolChoice(names.wire(choice.name))
    messages = tuple(_message_for_wire(m, names, style) for m in request.messages)
    return replace(request, messages=messages, tools=tools, tool_choice=choice)


def _message_for_wire(message: Message, names: ToolNames, style: IdStyle | None) -> Message:
    def wire_id(call_id: str) -> str:
        return wire_call_id(call_id, style) if style else call_id

    if isinstance(message, AssistantMessage) and message.tool_calls:
        calls = tuple(
            replace(call, id=wire_id(call.id), name=names.wire(call.name))
            for call in message.tool_calls
        )
        return replace(message, tool_calls=calls)
    if isinstance(message, ToolResultMessage):
        return replace(
            message,
            tool_call_id=wire_id(message.tool_call_id),
            name=names.wire(message.name) if message.name else None,
        )
    return message
