"""Turning provider output into canonical form: arguments, finish reasons, streamed deltas."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from llm_service.types import (
    AssistantMessage,
    ChatResponse,
    FinishReason,
    StreamEvent,
    TextDelta,
    Thinking,
    ThinkingDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)


def parse_arguments(raw: str | dict[str, Any] | None) -> tuple[dict[str, Any], str | None]:
    """Return (arguments, raw text if it was not a JSON object).

    Empty means ``{}``; a JSON string that itself holds a JSON object (double encoding, common in
    small models) is unwrapped once.
    """
    if raw is None:
        return {}, None
    if isinstance(raw, dict):
        return raw, None
    text = raw.strip()
    if not text:
        return {}, None
    try:
        value: Any = json.loads(text)
        if isinstance(value, str):
            value = json.loads(value)
    except ValueError:
        return {}, raw
    if isinstance(value, dict):
        return value, None
    return {}, raw


def tool_call(call_id: str, name: str, raw: str | dict[str, Any] | None) -> ToolCall:
    arguments, unparsed = parse_arguments(raw)
    return ToolCall(id=call_id, name=name, arguments=arguments, raw_arguments=unparsed)


def arguments_json(call: ToolCall) -> str:
    """The arguments as the JSON text an OpenAI-style API carries."""
    if call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False, separators=(",", ":"))


def finish_reason(reason: FinishReason, has_tool_calls: bool) -> FinishReason:
    """Calls were made unless the answer was cut off: providers disagree, callers should not."""
    if has_tool_calls and reason != "length":
        return "tool_calls"
    return reason


@dataclass
class _PendingCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class StreamAssembler:
    """Accumulates stream deltas into the final ``ChatResponse``."""

    text: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    calls: dict[int, _PendingCall] = field(default_factory=dict)

    def add(self, event: StreamEvent) -> None:
        if isinstance(event, TextDelta):
            self.add_text(event.text)
        elif isinstance(event, ThinkingDelta):
            self.add_thinking(event.text)
        elif isinstance(event, ToolCallDelta):
            self.add_tool_call(event)

    def add_text(self, text: str) -> None:
        self.text.append(text)

    def add_thinking(self, text: str) -> None:
        self.thinking.append(text)

    def add_tool_call(self, delta: ToolCallDelta) -> None:
        pending = self.calls.setdefault(delta.index, _PendingCall())
        if delta.id:
            pending.id = delta.id
        if delta.name:
            pending.name += delta.name
        if delta.arguments:
            pending.arguments.append(delta.arguments)

    def finish(self, reason: FinishReason, usage: Usage, model: str) -> ChatResponse:
        calls = tuple(
            tool_call(p.id, p.name, "".join(p.arguments)) for _, p in sorted(self.calls.items())
        )
        thinking = (Thinking(text="".join(self.thinking)),) if self.thinking else ()
        message = AssistantMessage(
            content="".join(self.text) or None, tool_calls=calls, thinking=thinking
        )
        return ChatResponse(
            message=message,
            finish_reason=finish_reason(reason, bool(calls)),
            usage=usage,
            model=model,
        )
