"""Tool names and tool-call ids rewritten deterministically per target."""

from __future__ import annotations

import re

import pytest

from adapters.naming import ToolNames, for_wire, wire_call_id, wire_tool_name
from llm_service.types import (
    AssistantMessage,
    ChatRequest,
    NamedToolChoice,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)


def test_accepted_names_pass_unchanged() -> None:
    assert wire_tool_name("get_weather-2") == "get_weather-2"


@pytest.mark.parametrize("name", ["files.read", "github/create_issue", "x" * 80, "naïve"])
def test_rejected_names_are_sanitized_deterministically(name: str) -> None:
    wire = wire_tool_name(name)

    assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", wire)
    assert wire == wire_tool_name(name)
    assert ToolNames.of([name]).canonical(wire) == name


def test_similar_names_do_not_collide() -> None:
    assert wire_tool_name("a.b") != wire_tool_name("a/b")


ODD_IDS = ["call|paris.1", "toolu_" + "o" * 60, "abc", "call_0123456789abcdef0123456789"]


@pytest.mark.parametrize("call_id", ODD_IDS)
def test_ids_fit_every_target(call_id: str) -> None:
    assert len(wire_call_id(call_id, "openai")) <= 40
    assert re.fullmatch(r"[A-Za-z0-9_-]+", wire_call_id(call_id, "anthropic"))
    assert re.fullmatch(r"[A-Za-z0-9]{9}", wire_call_id(call_id, "mistral"))
    assert wire_call_id(call_id, "mistral") == wire_call_id(call_id, "mistral")


def test_ids_a_target_accepts_are_kept() -> None:
    assert wire_call_id("call_abc", "openai") == "call_abc"
    assert wire_call_id("toolu_01A", "anthropic") == "toolu_01A"
    assert wire_call_id("a1B2c3D4e", "mistral") == "a1B2c3D4e"


def test_a_call_and_its_result_stay_paired_after_rewriting() -> None:
    request = ChatRequest(
        messages=(
            UserMessage("hi"),
            AssistantMessage(tool_calls=(ToolCall("call|1", "files.read", {}),)),
            ToolResultMessage("call|1", "content", name="files.read"),
        ),
        tools=(ToolSpec("files.read", "Read", {}),),
        tool_choice=NamedToolChoice("files.read"),
    )
    names = ToolNames.of(["files.read"])

    wire = for_wire(request, names, "mistral")

    assistant, result = wire.messages[1], wire.messages[2]
    assert isinstance(assistant, AssistantMessage)
    assert isinstance(result, ToolResultMessage)
    assert assistant.tool_calls[0].id == result.tool_call_id
    assert assistant.tool_calls[0].name == wire.tools[0].name == names.wire("files.read")
    assert wire.tool_choice == NamedToolChoice(names.wire("files.read"))
    assert request.messages[1] == AssistantMessage(
        tool_calls=(ToolCall("call|1", "files.read", {}),)
    )
