"""What Codex sends on ``/v1/responses``: function tools grouped in ``namespace`` tools, beside a
``web_search`` built-in, and a reasoning effort, through the openai SDK to a translated model
(OpenAI's chat wire)."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from tests.gateway.responses_api.conftest import WEATHER_TOOL, ResponsesStack
from tests.support.fake_openai import FakeReply, FakeToolCall

AGENTS: dict[str, Any] = {
    "type": "namespace",
    "name": "multi_agent",
    "description": "Tools for spawning and managing sub-agents.",
    "tools": [
        {
            "type": "function",
            "name": "spawn_agent",
            "description": "Start a sub-agent",
            "strict": False,
            "parameters": {"type": "object", "properties": {"task": {"type": "string"}}},
        },
        {"type": "function", "name": "close_agent", "parameters": {"type": "object"}},
    ],
}
CODEX_TOOLS: list[Any] = [
    WEATHER_TOOL,
    AGENTS,
    {"type": "web_search", "external_web_access": False},
]


def test_a_namespaced_tool_is_offered_called_and_answered(fresh: ResponsesStack) -> None:
    fake = fresh.openai_fake
    fake.queue(
        FakeReply(
            tool_calls=[FakeToolCall("multi_agent__spawn_agent", {"task": "lint"}, "call_1")]
        ),
        FakeReply(text="Spawned."),
    )
    client = fresh.client()

    first = client.responses.create(model="gpt", input="Lint it", tools=CODEX_TOOLS, store=False)
    call = first.output[0]
    assert call.type == "function_call"
    assert (call.name, call.namespace, json.loads(call.arguments)) == (
        "spawn_agent",
        "multi_agent",
        {"task": "lint"},
    )
    # Codex keeps no stored history (store: false): it sends the whole conversation back.
    second = client.responses.create(
        model="gpt",
        input=[
            {"role": "user", "content": "Lint it"},
            call.model_dump(exclude_none=True),
            {"type": "function_call_output", "call_id": call.call_id, "output": "agent 7"},
        ],
        tools=CODEX_TOOLS,
        store=False,
    )

    assert second.output_text == "Spawned."
    offered = [tool["function"]["name"] for tool in fake.requests[0]["tools"]]
    # This gateway maps web_search to its MCP tool `echo` (conftest); unmapped, it is left out.
    assert offered == [
        "get_weather",
        "multi_agent__spawn_agent",
        "multi_agent__close_agent",
        "echo",
    ]
    history = fake.requests[1]["messages"]
    assert history[1]["tool_calls"][0]["function"]["name"] == "multi_agent__spawn_agent"
    assert history[2] == {"role": "tool", "tool_call_id": "call_1", "content": "agent 7"}


def test_a_namespaced_call_streams_under_its_own_name(fresh: ResponsesStack) -> None:
    fresh.openai_fake.queue(
        FakeReply(tool_calls=[FakeToolCall("multi_agent__close_agent", {"id": 7}, "call_2")])
    )

    with fresh.client().responses.stream(model="gpt", input="Close 7", tools=CODEX_TOOLS) as stream:
        events = list(stream)
        final = stream.get_final_response()

    added = next(e for e in events if e.type == "response.output_item.added")
    assert added.item.type == "function_call"
    assert (added.item.name, added.item.namespace) == ("close_agent", "multi_agent")
    call = final.output[0]
    assert call.type == "function_call"
    assert (call.name, call.namespace) == ("close_agent", "multi_agent")


def test_a_namespace_of_other_tools_is_refused_naming_it(fresh: ResponsesStack) -> None:
    group = {**AGENTS, "tools": [{"type": "web_search"}]}
    client = fresh.client()

    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(model="gpt", input="hi", tools=[group])  # type: ignore[list-item]

    assert refused.value.body["param"] == "tools[0].tools[0]"  # type: ignore[index]
    assert fresh.openai_fake.requests == []


def test_codexs_reasoning_effort_reaches_a_translated_model(fresh: ResponsesStack) -> None:
    fresh.openai_fake.queue(FakeReply(text="Thought it through."))

    response = fresh.client().responses.create(
        model="gpt",
        input="Think first",
        reasoning={"effort": "high", "summary": "auto"},
        include=["reasoning.encrypted_content"],
        store=False,
    )

    assert response.output_text == "Thought it through."
    assert fresh.openai_fake.requests[0]["reasoning_effort"] == "high"
