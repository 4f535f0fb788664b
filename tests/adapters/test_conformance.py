"""Every provider adapter, whole and streamed, against its wire-faithful fake (official SDKs)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from adapters.naming import wire_tool_name
from llm_service.types import (
    AssistantMessage,
    ChatRequest,
    NamedToolChoice,
    SystemMessage,
    ToolCall,
    ToolCallDelta,
    ToolChoice,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from tests.adapters.conformance import Target, run
from tests.support.fake_openai import FakeReply, FakeToolCall

# The adapters (and their SDK clients) are shared: every test runs on the session loop.
pytestmark = pytest.mark.asyncio(loop_scope="session")

WEATHER = ToolSpec(
    "get_weather",
    "Weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
TIME = ToolSpec("get_time", "The current time", {"type": "object", "properties": {}})
ASK = ChatRequest(messages=(UserMessage("Weather in Paris?"),), tools=(WEATHER, TIME))


async def test_text_answer(target: Target, mode: str) -> None:
    target.queue(FakeReply(text="Hello there", prompt_tokens=12, completion_tokens=3))

    response, deltas = await run(target.adapter(), ChatRequest((UserMessage("Hi"),)), mode)

    assert response.message.content == "Hello there"
    assert response.message.tool_calls == ()
    assert response.finish_reason == "stop"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (12, 3)
    if mode == "stream":
        assert len(deltas) > 1


def _wire_choice(target: Target) -> Any:
    sent = target.sent
    if target.provider == "ollama":
        return sorted(t["function"]["name"] for t in sent.get("tools", []))
    return sent.get("tool_choice")


EXPECTED_CHOICE: dict[str, dict[str, Any]] = {
    "openai": {
        "auto": "auto",
        "required": "required",
        "none": "none",
        "named": {"type": "function", "function": {"name": "get_time"}},
    },
    "anthropic": {
        "auto": {"type": "auto"},
        "required": {"type": "any"},
        "none": {"type": "none"},
        "named": {"type": "tool", "name": "get_time"},
    },
    # Ollama has no tool_choice: "none" offers no tools, a named choice only that tool.
    "ollama": {
        "auto": ["get_time", "get_weather"],
        "required": ["get_time", "get_weather"],
        "none": [],
        "named": ["get_time"],
    },
}
EXPECTED_CHOICE["litellm"] = EXPECTED_CHOICE["openai"]
CHOICES: dict[str, ToolChoice] = {
    "auto": "auto",
    "required": "required",
    "none": "none",
    "named": NamedToolChoice("get_time"),
}


@pytest.mark.parametrize("choice", CHOICES)
async def test_tool_choice(target: Target, mode: str, choice: str) -> None:
    if choice == "none":
        target.queue(FakeReply(text="No tools needed"))
    else:
        target.queue(FakeReply(tool_calls=[FakeToolCall("get_time", {})]))
    request = ChatRequest(ASK.messages, ASK.tools, tool_choice=CHOICES[choice])

    response, _ = await run(target.adapter(), request, mode)

    assert _wire_choice(target) == EXPECTED_CHOICE[target.provider][choice]
    if choice == "none":
        assert response.message.content == "No tools needed"
        assert response.finish_reason == "stop"
    else:
        assert [(c.name, c.arguments) for c in response.message.tool_calls] == [("get_time", {})]
        assert response.finish_reason == "tool_calls"


@pytest.mark.parametrize("count", [1, 3])
async def test_one_and_parallel_calls(target: Target, mode: str, count: int) -> None:
    cities = ["Paris", "Oslo", "Lima"][:count]
    target.queue(
        FakeReply(
            text="Let me look." if target.provider == "anthropic" else None,
            tool_calls=[FakeToolCall("get_weather", {"city": c}) for c in cities],
        )
    )

    response, deltas = await run(target.adapter(), ASK, mode)

    calls = response.message.tool_calls
    assert [(c.name, c.arguments) for c in calls] == [("get_weather", {"city": c}) for c in cities]
    assert all(c.id for c in calls)
    assert len({c.id for c in calls}) == count
    assert response.finish_reason == "tool_calls"
    if mode == "stream":
        # Tool-call indexes are dense from 0 whatever the provider numbered its blocks.
        indexes = sorted({d.index for d in deltas if isinstance(d, ToolCallDelta)})
        assert indexes == list(range(count))


async def test_parallel_calls_can_be_disabled_on_anthropic(
    all_targets: dict[str, Target],
) -> None:
    target = all_targets["anthropic"]
    target.queue(FakeReply(text="ok"))
    request = ChatRequest(ASK.messages, ASK.tools, parallel_tool_calls=False)

    await run(target.adapter(), request, "whole")

    assert target.sent["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}


HISTORY = (
    SystemMessage("You are terse."),
    UserMessage("Weather in Paris and Oslo?"),
    AssistantMessage(
        content="Checking.",
        tool_calls=(
            ToolCall("call_paris", "get_weather", {"city": "Paris"}),
            ToolCall("call_oslo", "get_weather", {"city": "Oslo"}),
        ),
    ),
    ToolResultMessage("call_paris", "18C and sunny"),
    ToolResultMessage("call_oslo", "weather service down", is_error=True),
)


def _tool_results_on_wire(target: Target) -> list[Any]:
    messages = target.sent["messages"]
    if target.provider == "anthropic":
        last = messages[-1]
        assert last["role"] == "user"
        return [(b["tool_use_id"], b["content"], b.get("is_error", False)) for b in last["content"]]
    if target.provider == "ollama":
        return [(m["tool_name"], m["content"]) for m in messages if m["role"] == "tool"]
    return [(m["tool_call_id"], m["content"]) for m in messages if m["role"] == "tool"]


EXPECTED_RESULTS: dict[str, list[Any]] = {
    # No error flag in the OpenAI or Ollama APIs: it travels as a prefix (adapters.tool_results).
    "openai": [("call_paris", "18C and sunny"), ("call_oslo", "Error: weather service down")],
    "anthropic": [
        ("call_paris", "18C and sunny", False),
        ("call_oslo", "weather service down", True),
    ],
    "ollama": [("get_weather", "18C and sunny"), ("get_weather", "Error: weather service down")],
}
EXPECTED_RESULTS["litellm"] = EXPECTED_RESULTS["openai"]


async def test_multi_turn_with_tool_results(target: Target, mode: str) -> None:
    target.queue(FakeReply(text="Paris is sunny; Oslo unknown."))
    request = ChatRequest(HISTORY, (WEATHER,))

    response, _ = await run(target.adapter(), request, mode)

    assert response.message.content == "Paris is sunny; Oslo unknown."
    assert _tool_results_on_wire(target) == EXPECTED_RESULTS[target.provider]
    if target.provider == "anthropic":
        assert target.sent["system"] == "You are terse."
        assert target.sent["max_tokens"] > 0
        assistant = target.sent["messages"][1]["content"]
        assert [b["type"] for b in assistant] == ["text", "tool_use", "tool_use"]
    if target.provider == "ollama":
        call = target.sent["messages"][2]["tool_calls"][0]
        assert call["function"]["arguments"] == {"city": "Paris"}  # an object, not a string


async def test_tool_without_parameters(target: Target, mode: str) -> None:
    bare = ToolSpec("list_models", "List all models", {})
    target.queue(FakeReply(tool_calls=[FakeToolCall("list_models", {})]))

    response, _ = await run(target.adapter(), ChatRequest(ASK.messages, (bare,)), mode)

    assert [(c.name, c.arguments) for c in response.message.tool_calls] == [("list_models", {})]
    assert _wire_schemas(target)["list_models"] == {"type": "object", "properties": {}}


def _wire_schemas(target: Target) -> dict[str, Any]:
    tools = target.sent.get("tools", [])
    if target.provider == "anthropic":
        return {t["name"]: t["input_schema"] for t in tools}
    return {t["function"]["name"]: t["function"]["parameters"] for t in tools}


SEARCH = ToolSpec(
    "search",
    "Search documents",
    {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to find", "default": "*"},
            "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
            "filter": {"$ref": "#/$defs/Filter"},
        },
        "required": ["query"],
        "$defs": {
            "Filter": {
                "type": "object",
                "properties": {"tag": {"type": "string", "format": "uuid", "default": "x"}},
            }
        },
    },
)


def _keys(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, child in value.items():
            yield key
            yield from _keys(child)
    elif isinstance(value, list):
        for child in value:
            yield from _keys(child)


async def test_schemas_with_default_ref_and_nullable_union(target: Target, mode: str) -> None:
    original = copy.deepcopy(SEARCH.parameters)
    target.queue(FakeReply(tool_calls=[FakeToolCall("search", {"query": "q", "limit": None})]))

    response, _ = await run(target.adapter(), ChatRequest(ASK.messages, (SEARCH,)), mode)

    assert response.message.tool_calls[0].arguments == {"query": "q", "limit": None}
    assert SEARCH.parameters == original  # never mutated
    schema = _wire_schemas(target)["search"]
    keys = set(_keys(schema))
    assert "$schema" not in keys
    assert schema["type"] == "object"
    assert schema["required"] == ["query"]
    if target.provider == "ollama":
        assert not keys & {"$ref", "$defs", "anyOf", "default", "format"}
        assert schema["properties"]["filter"]["properties"]["tag"]["type"] == "string"
        assert "default" in schema["properties"]["query"]["description"]
        assert schema["properties"]["limit"]["type"] == ["integer", "null"]
    else:
        if target.provider != "anthropic":  # Anthropic takes full JSON Schema, defaults too
            assert "default" not in keys
        assert schema["properties"]["limit"]["anyOf"] == [{"type": "integer"}, {"type": "null"}]


async def test_tool_names_a_provider_rejects_are_mapped_back(target: Target, mode: str) -> None:
    dotted = ToolSpec("files.read/v2", "Read a file", {"type": "object", "properties": {}})
    wire = wire_tool_name(dotted.name)
    target.queue(FakeReply(tool_calls=[FakeToolCall(wire, {})]))

    response, _ = await run(target.adapter(), ChatRequest(ASK.messages, (dotted,)), mode)

    assert list(_wire_schemas(target)) == [wire]
    assert [c.name for c in response.message.tool_calls] == ["files.read/v2"]
