"""A streamed tool call reaches OpenAI-SDK callers with JSON arguments, whatever the provider.

A call without arguments is the edge: Anthropic streams its input as one empty
``input_json_delta``, so a writer that forwards pieces gives ``arguments: ""``, which
``json.loads`` refuses. Every adapter's stream must end with the same arguments as its whole reply.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import openai
import pytest

from tests.support.databases import sqlite_database
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_ollama import FakeOllama
from tests.support.fake_openai import FakeOpenAI, FakeReply, FakeToolCall
from tests.support.gateway import running_gateway
from tests.support.servers import serve

TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "The current time",
            "parameters": {"type": "object", "properties": {}},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    },
]
NATIVE_CALLS = [FakeToolCall("get_time", {}), FakeToolCall("get_weather", {"city": "Oslo"})]
HERMES_TEXT = (
    '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>\n'
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
)
EXPECTED = [("get_time", {}), ("get_weather", {"city": "Oslo"})]


@dataclass
class Stack:
    client: openai.OpenAI
    fakes: dict[str, FakeOpenAI | FakeAnthropic | FakeOllama]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    fake_openai, fake_anthropic, fake_ollama = FakeOpenAI(), FakeAnthropic(), FakeOllama()
    with (
        serve(fake_openai.app()) as openai_url,
        serve(fake_anthropic.app()) as anthropic_url,
        serve(fake_ollama.app()) as ollama_url,
        sqlite_database(tmp_path_factory.mktemp("db")) as database_url,
        running_gateway(
            database_url,
            environ={"UPSTREAM_KEY": "sk-upstream"},
            models=[
                {
                    "name": "gpt",
                    "provider": "openai",
                    "base_url": f"{openai_url}/v1",
                    "api_key_env": "UPSTREAM_KEY",
                },
                {
                    "name": "claude",
                    "provider": "anthropic",
                    "base_url": anthropic_url,
                    "api_key_env": "UPSTREAM_KEY",
                },
                {
                    "name": "llama",
                    "provider": "ollama",
                    "model": "llama3.2",
                    "base_url": ollama_url,
                },
                {
                    "name": "lite",
                    "provider": "litellm",
                    "model": "openai/gpt-x",
                    "base_url": f"{openai_url}/v1",
                    "api_key_env": "UPSTREAM_KEY",
                },
                {
                    "name": "qwen-text",
                    "provider": "openai",
                    "model": "Qwen/Qwen2.5-7B-Instruct",
                    "base_url": f"{openai_url}/v1",
                    "tool_format": "hermes",
                },
            ],
        ) as gateway,
    ):
        key = gateway.create_key("team", ["user"])
        client = openai.OpenAI(base_url=gateway.v1, api_key=key, max_retries=0)
        fakes: dict[str, Any] = {
            "gpt": fake_openai,
            "claude": fake_anthropic,
            "llama": fake_ollama,
            "lite": fake_openai,
            "qwen-text": fake_openai,
        }
        yield Stack(client, fakes)


def _queue(stack: Stack, model: str) -> None:
    fake = stack.fakes[model]
    text_model = model == "qwen-text"
    reply = FakeReply(text=HERMES_TEXT) if text_model else FakeReply(tool_calls=NATIVE_CALLS)
    fake.replies.clear()
    fake.queue(reply)  # type: ignore[arg-type]


def _streamed_calls(chunks: list[Any]) -> list[tuple[str, str]]:
    names: dict[int, str] = {}
    arguments: dict[int, str] = {}
    for chunk in chunks:
        for choice in chunk.choices:
            for delta in choice.delta.tool_calls or ():
                function = delta.function
                names[delta.index] = names.get(delta.index, "") + (function.name or "")
                arguments[delta.index] = arguments.get(delta.index, "") + (function.arguments or "")
    return [(names[i], arguments[i]) for i in sorted(names)]


@pytest.mark.parametrize("model", ["claude", "gpt", "llama", "lite", "qwen-text"])
def test_streamed_calls_carry_json_arguments_as_whole_replies_do(stack: Stack, model: str) -> None:
    messages: list[Any] = [{"role": "user", "content": "Time, and weather in Oslo?"}]

    _queue(stack, model)
    chunks = list(
        stack.client.chat.completions.create(
            model=model, messages=messages, tools=TOOLS, stream=True
        )
    )
    _queue(stack, model)
    whole = stack.client.chat.completions.create(model=model, messages=messages, tools=TOOLS)

    streamed = _streamed_calls(chunks)
    assert [(name, json.loads(arguments)) for name, arguments in streamed] == EXPECTED
    whole_calls = whole.choices[0].message.tool_calls or []
    assert [(c.function.name, c.function.arguments) for c in whole_calls] == [  # type: ignore[union-attr]
        (name, json.dumps(arguments, separators=(",", ":"))) for name, arguments in EXPECTED
    ]
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
