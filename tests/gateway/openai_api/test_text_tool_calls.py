"""A raw-text model behind the gateway looks exactly like native tool calling to the SDK."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import openai
import pytest

from tests.support.databases import sqlite_database
from tests.support.fake_openai import FakeOpenAI, FakeReply
from tests.support.gateway import running_gateway
from tests.support.servers import serve

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
QWEN_REPLY = (
    "I'll check both.\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "São Paulo"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo } </tool_call>"}}\n'
    "</tool_call>"
)


@dataclass
class TextStack:
    fake: FakeOpenAI
    client: openai.OpenAI


@pytest.fixture(scope="module")
def text_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TextStack]:
    fake = FakeOpenAI()
    with (
        serve(fake.app()) as fake_url,
        sqlite_database(tmp_path_factory.mktemp("db")) as database_url,
        running_gateway(
            database_url,
            models=[
                {
                    "name": "qwen-local",
                    "provider": "openai",
                    "model": "Qwen/Qwen2.5-7B-Instruct",
                    "base_url": f"{fake_url}/v1",
                    "tool_format": "auto",
                },
                {
                    "name": "llama-local",
                    "provider": "openai",
                    "base_url": f"{fake_url}/v1",
                    "tool_format": "pythonic",
                },
            ],
        ) as gateway,
    ):
        key = gateway.create_key("team", ["user"])
        yield TextStack(fake, openai.OpenAI(base_url=gateway.v1, api_key=key, max_retries=0))


@pytest.fixture
def stack(text_stack: TextStack) -> TextStack:
    text_stack.fake.replies.clear()
    text_stack.fake.requests.clear()
    return text_stack


def test_whole_reply_text_becomes_tool_calls(stack: TextStack) -> None:
    stack.fake.queue(FakeReply(text=QWEN_REPLY))

    completion = stack.client.chat.completions.create(
        model="qwen-local",
        messages=[{"role": "user", "content": "Weather in São Paulo and Oslo?"}],
        tools=[WEATHER_TOOL],  # type: ignore[list-item]
    )

    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "I'll check both."
    calls = choice.message.tool_calls or []
    assert [json.loads(c.function.arguments) for c in calls] == [  # type: ignore[union-attr]
        {"city": "São Paulo"},
        {"city": "Oslo } </tool_call>"},
    ]
    assert len({c.id for c in calls}) == 2
    sent = stack.fake.requests[0]
    assert "tools" not in sent
    assert sent["model"] == "Qwen/Qwen2.5-7B-Instruct"
    assert "<tools>" in sent["messages"][0]["content"]


def test_streamed_reply_text_becomes_tool_call_deltas(stack: TextStack) -> None:
    stack.fake.queue(FakeReply(text=QWEN_REPLY))

    chunks = list(
        stack.client.chat.completions.create(
            model="qwen-local",
            messages=[{"role": "user", "content": "Weather?"}],
            tools=[WEATHER_TOOL],  # type: ignore[list-item]
            stream=True,
        )
    )

    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    calls: dict[int, dict[str, str]] = {}
    for chunk in chunks:
        for delta in chunk.choices[0].delta.tool_calls or []:
            call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
            call["id"] += delta.id or ""
            if delta.function:
                call["name"] += delta.function.name or ""
                call["arguments"] += delta.function.arguments or ""
    assert content == "I'll check both."
    assert "<tool_call>" not in content
    assert [c["name"] for c in calls.values()] == ["get_weather", "get_weather"]
    assert [json.loads(c["arguments"])["city"] for c in calls.values()] == [
        "São Paulo",
        "Oslo } </tool_call>",
    ]
    assert len({c["id"] for c in calls.values()}) == 2
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_tool_results_go_back_as_the_family_writes_them(stack: TextStack) -> None:
    stack.fake.queue(FakeReply(text="It is 21 °C in Oslo."))

    completion = stack.client.chat.completions.create(
        model="llama-local",
        messages=[
            {"role": "user", "content": "Weather in Oslo?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "21 °C"},
        ],
        tools=[WEATHER_TOOL],  # type: ignore[list-item]
    )

    assert completion.choices[0].message.content == "It is 21 °C in Oslo."
    assert completion.choices[0].finish_reason == "stop"
    messages = stack.fake.requests[0]["messages"]
    assert messages[2] == {"role": "assistant", "content": "[get_weather(city='Oslo')]"}
    assert messages[3] == {"role": "tool", "tool_call_id": "call_1", "content": "21 °C"}


def test_plain_text_without_calls_passes_through(stack: TextStack) -> None:
    stack.fake.queue(FakeReply(text="[1] is a footnote, not a call."))

    completion = stack.client.chat.completions.create(
        model="llama-local",
        messages=[{"role": "user", "content": "Hi"}],
        tools=[WEATHER_TOOL],  # type: ignore[list-item]
    )

    assert completion.choices[0].message.content == "[1] is a footnote, not a call."
    assert completion.choices[0].message.tool_calls is None
    assert completion.choices[0].finish_reason == "stop"
