"""What every text tool format provides, and the pieces the formats share.

A format renders tools into a system prompt, renders assistant calls and tool results back into
history in the family's own style, and recognises calls in a reply. Recognition is split so one
driver (``adapters.text.scan``) can run every format whole or streamed with identical results:

- ``markers`` may open a call block anywhere in the reply; ``parse_block`` reads one block.
- ``openers`` start a reply that is, as a whole, a call (bare JSON, a Python list, a fenced
  block); the driver hands the whole rest of the reply to ``parse_leading`` once it is complete.
- ``end_tokens`` are the family's end-of-turn tokens: a server that does not skip special tokens
  leaves them at the end of the reply, where they are dropped (anywhere else they are text).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from adapters.text.jsonscan import JsonReader, Verdict, loads, skip_ws
from llm_service.types import ToolCall, ToolChoice, ToolResultMessage, ToolSpec

THINK_TAGS = ("<think>", "</think>")


@dataclass(frozen=True, slots=True)
class Call:
    """A tool call found in text; ids are given by the stream, which knows every id it issued."""

    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Text:
    text: str


@dataclass(frozen=True, slots=True)
class Reasoning:
    text: str


Item = Text | Reasoning | Call


@dataclass(frozen=True, slots=True)
class Parsed:
    """A call block that was read: its calls and the index just past it."""

    calls: tuple[Call, ...]
    end: int


# UNDECIDED: the text ends before the block is decided (never returned when ``final``).
# INVALID: the block is not a valid call, so its marker is plain text.
Block = Parsed | Verdict


class ToolFormat(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def markers(self) -> tuple[str, ...]: ...

    @property
    def openers(self) -> tuple[str, ...]: ...

    @property
    def think_tags(self) -> tuple[str, str]: ...

    @property
    def end_tokens(self) -> tuple[str, ...]: ...

    @property
    def results_as_tool_role(self) -> bool:
        """True: tool results stay ``tool`` messages, which the family's chat template renders
        itself (the Llama templates make them ``ipython`` turns); False: user text."""
        ...

    def render_tools(self, tools: Sequence[ToolSpec], choice: ToolChoice | None) -> str: ...

    def render_calls(self, calls: Sequence[ToolCall]) -> str: ...

    def render_result(self, result: ToolResultMessage, name: str) -> str: ...

    def parse_block(
        self,
        text: str,
        start: int,
        marker: str,
        *,
        final: bool,
        tools: Collection[str],
        reader: JsonReader,
    ) -> Block: ...

    def parse_leading(self, text: str, tools: Collection[str]) -> tuple[Item, ...] | None:
        """The whole reply's calls (or, for a format that wraps plain answers, its text)."""
        ...


_CALL_KEYS = frozenset({"name", "arguments", "parameters", "id", "type"})


def call_from_object(value: Any, tools: Collection[str]) -> Call | None:
    """``{"name", "arguments" | "parameters"}`` (or the OpenAI ``{"function": {...}}`` wrapper)
    naming a declared tool; anything else, including extra keys, is not a call."""
    if isinstance(value, dict) and isinstance(value.get("function"), dict):
        if not set(value) <= {"function", "id", "type"}:
            return None
        value = value["function"]
    if not isinstance(value, dict) or not set(value) <= _CALL_KEYS:
        return None
    name = value.get("name")
    if not isinstance(name, str) or name not in tools:
        return None
    arguments = value.get("arguments", value.get("parameters", {}))
    if isinstance(arguments, str):  # double-encoded arguments, common in small models
        try:
            arguments = loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError):
            return None
    if not isinstance(arguments, dict):
        return None
    return Call(name, arguments)


def calls_from_values(values: Sequence[Any], tools: Collection[str]) -> tuple[Call, ...] | None:
    """All values as calls, or None: a block with one bad call is left as text entirely."""
    calls = [call_from_object(v, tools) for v in values]
    if not calls or any(c is None for c in calls):
        return None
    return tuple(c for c in calls if c is not None)


def calls_from_json(value: Any, tools: Collection[str]) -> tuple[Call, ...] | None:
    """A call object or a JSON array of call objects."""
    return calls_from_values(value if isinstance(value, list) else [value], tools)


def calls_from_any(value: Any, tools: Collection[str]) -> tuple[Call, ...] | None:
    """Every JSON shape a whole reply may take: a call, an array of calls,
    ``{"tool_calls": [...]}`` (with, as llama.cpp's generic schema has it, an empty
    ``"content"``) or ``{"tool_call": {...}}``."""
    if isinstance(value, dict) and "tool_calls" in value:
        inner = value["tool_calls"]
        rest = {k: v for k, v in value.items() if k != "tool_calls"}
        if not isinstance(inner, list) or rest not in ({}, {"content": ""}, {"content": None}):
            return None
        return calls_from_values(inner, tools)
    if isinstance(value, dict) and set(value) == {"tool_call"}:
        value = value["tool_call"]
    return calls_from_json(value, tools)


def tools_json(tools: Sequence[ToolSpec], wrapped: bool = True) -> list[dict[str, Any]]:
    specs = [
        {"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools
    ]
    if not wrapped:
        return specs
    return [{"type": "function", "function": spec} for spec in specs]


def choice_instruction(choice: ToolChoice | None) -> str:
    """The tool_choice a raw-text model cannot be forced into, asked for in words."""
    if choice == "required":
        return "\nYou must call at least one function."
    if choice is not None and not isinstance(choice, str):
        return f"\nYou must call the function `{choice.name}`."
    return ""


def closing_pending(text: str, pos: int, closer: str) -> bool:
    """Whether the text from ``pos`` is whitespace or the start of ``closer``: undecided."""
    rest = skip_ws(text, pos)
    return len(text) - rest < len(closer) and closer.startswith(text[rest:])
