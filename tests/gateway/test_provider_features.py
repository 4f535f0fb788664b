"""Provider features through the gateway's two APIs, called with the official SDKs: prompt caching,
extended thinking and OpenAI's options reach the model, and cached tokens come back in usage,
whole and streamed."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_openai import FakeOpenAI, FakeReply, FakeToolCall
from tests.support.gateway import RunningGateway, running_gateway
from tests.support.servers import serve

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}},
    "required": ["answer"],
    "additionalProperties": False,
}
CLOCK = {
    "name": "get_time",
    "description": "The time",
    "input_schema": {"type": "object", "properties": {}},
    "cache_control": {"type": "ephemeral"},
}


@dataclass
class Stack:
    gateway: RunningGateway
    key: str
    claude: FakeAnthropic
    gpt: FakeOpenAI

    def anthropic(self) -> anthropic.Anthropic:
        return anthropic.Anthropic(base_url=self.gateway.url, api_key=self.key, max_retries=0)

    def openai(self) -> openai.OpenAI:
        return openai.OpenAI(base_url=f"{self.gateway.url}/v1", api_key=self.key, max_retries=0)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    claude, gpt = FakeAnthropic(), FakeOpenAI()
    database_url = f"sqlite+aiosqlite:///{Path(tmp_path_factory.mktemp('db')) / 'gateway.db'}"
    with (
        serve(claude.app()) as claude_url,
        serve(gpt.app()) as gpt_url,
        running_gateway(
            database_url,
            environ={"UPSTREAM_KEY": "sk-upstream"},
            models=[
                {
                    "name": "claude",
                    "provider": "anthropic",
                    "model": "claude-x",
                    "base_url": claude_url,
                    "api_key_env": "UPSTREAM_KEY",
                },
                {
                    "name": "gpt",
                    "provider": "openai",
                    "model": "gpt-x",
                    "base_url": f"{gpt_url}/v1",
                    "api_key_env": "UPSTREAM_KEY",
                },
            ],
        ) as gateway,
    ):
        yield Stack(gateway, gateway.create_key("team", ["user"]), claude, gpt)


@pytest.fixture
def fresh(stack: Stack) -> Stack:
    for fake in (stack.claude, stack.gpt):
        fake.replies.clear()  # type: ignore[attr-defined]
        fake.requests.clear()
    return stack


def test_cache_control_and_thinking_on_v1_messages_reach_an_anthropic_model(
    fresh: Stack,
) -> None:
    fresh.claude.queue(FakeReply(text="Noon.", prompt_tokens=120, cached_tokens=100))
    message = fresh.anthropic().messages.create(
        model="claude",
        max_tokens=4000,
        system=[{"type": "text", "text": "Long rules.", "cache_control": {"type": "ephemeral"}}],
        tools=[CLOCK],  # type: ignore[list-item]
        thinking={"type": "enabled", "budget_tokens": 2000},
        messages=[
            {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": "A long document.",
                        "cache_control": {"type": "ephemeral", "ttl": "1h"},
                    },
                    {"type": "text", "text": "What time is it?"},
                ],
            }
        ],
    )

    [sent] = fresh.claude.requests
    assert sent["system"] == [
        {"type": "text", "text": "Long rules.", "cache_control": {"type": "ephemeral"}}
    ]
    assert sent["tools"][0]["cache_control"] == {"type": "ephemeral"}
    assert sent["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 2000}
    assert [block.type for block in message.content] == ["thinking", "text"]
    assert message.usage.cache_read_input_tokens == 100
    assert message.usage.cache_creation_input_tokens == 0
    assert message.usage.input_tokens == 20


def test_cache_usage_comes_back_on_a_streamed_message(fresh: Stack) -> None:
    fresh.claude.queue(
        FakeReply(text="Noon.", prompt_tokens=120, cached_tokens=30, cache_write_tokens=80)
    )
    with fresh.anthropic().messages.stream(
        model="claude",
        max_tokens=100,
        cache_control={"type": "ephemeral"},
        messages=[{"role": "user", "content": "What time is it?"}],
    ) as stream:
        message = stream.get_final_message()

    assert fresh.claude.requests[0]["cache_control"] == {"type": "ephemeral"}
    assert message.usage.cache_read_input_tokens == 30
    assert message.usage.cache_creation_input_tokens == 80
    assert message.usage.input_tokens == 10


def test_thinking_on_v1_messages_becomes_reasoning_effort_for_an_openai_model(
    fresh: Stack,
) -> None:
    fresh.gpt.queue(FakeReply(text="42"))
    fresh.anthropic().messages.create(
        model="gpt",
        max_tokens=20000,
        thinking={"type": "enabled", "budget_tokens": 16384},
        messages=[{"role": "user", "content": "6 x 7?"}],
    )
    assert fresh.gpt.requests[0]["reasoning_effort"] == "high"


@pytest.mark.parametrize("stream", [False, True])
def test_openai_options_reach_an_openai_model_and_cached_tokens_come_back(
    fresh: Stack, stream: bool
) -> None:
    fresh.gpt.queue(
        FakeReply(text='{"answer": 42}', prompt_tokens=50, cached_tokens=32, reasoning_tokens=5)
    )
    options: dict[str, Any] = {
        "model": "gpt",
        "messages": [{"role": "user", "content": "6 x 7?"}],
        "reasoning_effort": "low",
        "prompt_cache_key": "team-a",
        "seed": 7,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": SCHEMA, "strict": True},
        },
    }
    client = fresh.openai()
    if stream:
        chunks = list(
            client.chat.completions.create(
                **options, stream=True, stream_options={"include_usage": True}
            )
        )
        usage = chunks[-1].usage
    else:
        usage = client.chat.completions.create(**options).usage

    [sent] = fresh.gpt.requests
    assert sent["reasoning_effort"] == "low"
    assert sent["prompt_cache_key"] == "team-a"
    assert sent["seed"] == 7
    assert sent["response_format"]["json_schema"] == {
        "name": "answer",
        "schema": SCHEMA,
        "strict": True,
    }
    assert usage is not None
    assert usage.prompt_tokens_details is not None
    assert usage.prompt_tokens_details.cached_tokens == 32
    assert usage.completion_tokens_details is not None
    assert usage.completion_tokens_details.reasoning_tokens == 5


def test_a_seed_for_an_anthropic_model_is_refused_clearly(fresh: Stack) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        fresh.openai().chat.completions.create(
            model="claude", messages=[{"role": "user", "content": "hi"}], seed=7
        )
    assert refused.value.status_code == 400
    assert "seed" in refused.value.message
    assert not fresh.claude.requests


def test_response_format_becomes_structured_output_on_an_anthropic_model(fresh: Stack) -> None:
    fresh.claude.queue(FakeReply(text='{"answer": 42}'))
    answer = fresh.openai().chat.completions.create(
        model="claude",
        messages=[{"role": "user", "content": "6 x 7?"}],
        response_format={"type": "json_schema", "json_schema": {"name": "a", "schema": SCHEMA}},
        reasoning_effort="low",
        max_completion_tokens=4000,
    )
    [sent] = fresh.claude.requests
    assert sent["output_config"] == {"format": {"type": "json_schema", "schema": SCHEMA}}
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert answer.choices[0].message.content == '{"answer": 42}'


@pytest.mark.parametrize("stream", [False, True])
def test_a_thinking_tool_loop_on_v1_messages_keeps_its_signed_thinking(
    fresh: Stack, stream: bool
) -> None:
    """The caller sends the thinking back, signature included (streamed too), as Anthropic
    requires; the gateway passes it on."""
    fresh.claude.queue(
        FakeReply(tool_calls=[FakeToolCall("get_time", {}, id="toolu_1")]), FakeReply(text="Noon.")
    )
    client = fresh.anthropic()
    ask: dict[str, Any] = {
        "model": "claude",
        "max_tokens": 4000,
        "tools": [CLOCK],
        "thinking": {"type": "enabled", "budget_tokens": 2000},
    }
    question = {"role": "user", "content": "What time is it?"}
    if stream:
        with client.messages.stream(**ask, messages=[question]) as events:
            first = events.get_final_message()
    else:
        first = client.messages.create(**ask, messages=[question])
    assert first.content[0].type == "thinking"
    assert first.content[0].signature.startswith("sig-claude-x")
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "noon"}
    second = client.messages.create(
        **ask,
        messages=[
            question,
            {"role": "assistant", "content": [b.model_dump() for b in first.content]},
            {"role": "user", "content": [result]},
        ],
    )
    assert second.content[-1].type == "text"
    assert fresh.claude.requests[1]["messages"][1]["content"][0]["type"] == "thinking"
