"""The official Anthropic SDK against the gateway's ``/v1/messages``, over any provider."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anthropic
import pytest
from anthropic.types import TextBlock, ToolUseBlock
from sqlalchemy import select

from db.engine import create_engine, session_factory
from db.usage_models import UsageRecord
from tests.gateway.anthropic_api.conftest import UPSTREAM_KEY, WEATHER_TOOL, AnthropicStack
from tests.support.fake_openai import FakeOpenAI, FakeReply, FakeToolCall
from tests.support.gateway import running_gateway

HI: list[Any] = [{"role": "user", "content": "Hi"}]


def test_whole_text_answer_with_usage(stack: AnthropicStack, fresh_fake: FakeOpenAI) -> None:
    fresh_fake.queue(FakeReply(text="Hello there", prompt_tokens=12, completion_tokens=3))

    # This SDK release no longer types the sampling fields; older ones (and curl) still send them.
    sampling = {"temperature": 0.2, "top_p": 0.9, "top_k": 5}
    message = stack.client().messages.create(
        model="gpt", max_tokens=50, messages=HI, extra_body=sampling
    )

    assert message.type == "message"
    assert message.role == "assistant"
    assert message.model == "gpt"
    assert message.id.startswith("msg_")
    assert [(b.type, b.text) for b in message.content if isinstance(b, TextBlock)] == [
        ("text", "Hello there")
    ]
    assert message.stop_reason == "end_turn"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (12, 3)
    sent = fresh_fake.requests[0]
    assert sent["model"] == "gpt-upstream"
    assert (sent["temperature"], sent["top_p"], sent["max_tokens"]) == (0.2, 0.9, 50)
    assert "top_k" not in sent
    assert sent["messages"] == [{"role": "user", "content": "Hi"}]
    assert fresh_fake.headers[0]["authorization"] == f"Bearer {UPSTREAM_KEY}"


def test_streamed_text_assembles_in_the_sdk(stack: AnthropicStack, fresh_fake: FakeOpenAI) -> None:
    fresh_fake.queue(FakeReply(text="streaming works fine", prompt_tokens=9, completion_tokens=4))

    with stack.client().messages.stream(model="gpt", max_tokens=50, messages=HI) as stream:
        pieces = list(stream.text_stream)
        message = stream.get_final_message()

    assert "".join(pieces) == "streaming works fine"
    assert len(pieces) > 1
    assert [b.type for b in message.content] == ["text"]
    assert message.content[0].type == "text"
    assert message.content[0].text == "streaming works fine"
    assert message.stop_reason == "end_turn"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (9, 4)


def test_raw_stream_is_the_exact_anthropic_event_sequence(stack: AnthropicStack) -> None:
    events = list(
        stack.client().messages.create(model="mock", max_tokens=50, messages=HI, stream=True)
    )

    types = [e.type for e in events]
    assert types[0] == "message_start"
    assert types[1] == "content_block_start"
    assert set(types[2:-3]) == {"content_block_delta"}
    assert types[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    text = "".join(
        e.delta.text
        for e in events
        if e.type == "content_block_delta" and e.delta.type == "text_delta"
    )
    assert text == "Echo: Hi"


def test_system_prompt_as_string_and_as_blocks(
    stack: AnthropicStack, fresh_fake: FakeOpenAI
) -> None:
    client = stack.client()
    client.messages.create(model="gpt", max_tokens=10, system="Be brief.", messages=HI)
    client.messages.create(
        model="gpt",
        max_tokens=10,
        system=[{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Be kind."}],
        messages=HI,
    )

    first, second = (r["messages"][0] for r in fresh_fake.requests)
    assert first == {"role": "system", "content": "Be brief."}
    assert second == {"role": "system", "content": "Be brief.\n\nBe kind."}


def test_stop_reasons_max_tokens_and_tool_use(
    stack: AnthropicStack, fresh_fake: FakeOpenAI
) -> None:
    fresh_fake.queue(
        FakeReply(text="cut", finish_reason="length"),
        FakeReply(tool_calls=[FakeToolCall("get_weather", {"city": "Oslo"})]),
    )
    client = stack.client()

    cut = client.messages.create(model="gpt", max_tokens=1, messages=HI)
    called = client.messages.create(model="gpt", max_tokens=50, messages=HI, tools=[WEATHER_TOOL])

    assert cut.stop_reason == "max_tokens"
    assert called.stop_reason == "tool_use"


def test_stop_sequences_reach_the_upstream(stack: AnthropicStack, fresh_fake: FakeOpenAI) -> None:
    stack.client().messages.create(
        model="gpt",
        max_tokens=10,
        messages=HI,
        stop_sequences=["END", "###"],
        metadata={"user_id": "user-42"},
    )

    assert fresh_fake.requests[0]["stop"] == ["END", "###"]
    assert fresh_fake.requests[0]["user"] == "user-42"


def _tool_history(call_id: str) -> list[Any]:
    return [
        {"role": "user", "content": "Weather in Oslo and Bergen?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {
                    "type": "tool_use",
                    "id": call_id,
                    "name": "get_weather",
                    "input": {"city": "Oslo"},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_2",
                    "name": "get_weather",
                    "input": {"city": "Bergen"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": call_id, "content": "Sunny, 21C"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": [{"type": "text", "text": "station offline"}],
                    "is_error": True,
                },
                {"type": "text", "text": "Compare them."},
            ],
        },
    ]


def test_parallel_tool_calls_come_back_as_tool_use_blocks(
    stack: AnthropicStack, fresh_fake: FakeOpenAI
) -> None:
    calls = [
        FakeToolCall("get_weather", {"city": "Oslo"}, id="call_a"),
        FakeToolCall("get_weather", {"city": "Bergen"}, id="call_b"),
    ]
    fresh_fake.queue(FakeReply(text="Checking.", tool_calls=calls), FakeReply(tool_calls=calls))
    client = stack.client()
    ask: list[Any] = [{"role": "user", "content": "Weather in Oslo and Bergen?"}]

    whole = client.messages.create(model="gpt", max_tokens=50, messages=ask, tools=[WEATHER_TOOL])
    with client.messages.stream(
        model="gpt",
        max_tokens=50,
        messages=ask,
        tools=[WEATHER_TOOL],
    ) as stream:
        streamed = stream.get_final_message()

    assert [b.type for b in whole.content] == ["text", "tool_use", "tool_use"]
    assert [b.type for b in streamed.content] == ["tool_use", "tool_use"]
    for message in (whole, streamed):
        uses = [b for b in message.content if isinstance(b, ToolUseBlock)]
        assert [(u.id, u.name, u.input) for u in uses] == [
            ("call_a", "get_weather", {"city": "Oslo"}),
            ("call_b", "get_weather", {"city": "Bergen"}),
        ]
        assert message.stop_reason == "tool_use"
    sent_tools = fresh_fake.requests[0]["tools"]
    assert sent_tools == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather for a city",
                "parameters": WEATHER_TOOL["input_schema"],
            },
        }
    ]


def test_tool_results_go_back_upstream_in_order(
    stack: AnthropicStack, fresh_fake: FakeOpenAI
) -> None:
    fresh_fake.queue(FakeReply(text="Oslo is nicer."))

    answer = stack.client().messages.create(
        model="gpt",
        max_tokens=50,
        messages=_tool_history("toolu_1"),
        tools=[WEATHER_TOOL],
    )

    assert answer.content[0].type == "text"
    sent = fresh_fake.requests[0]["messages"]
    assert sent[1]["role"] == "assistant"
    assert sent[1]["content"] == "Checking."
    assert [(c["id"], json.loads(c["function"]["arguments"])) for c in sent[1]["tool_calls"]] == [
        ("toolu_1", {"city": "Oslo"}),
        ("toolu_2", {"city": "Bergen"}),
    ]
    assert sent[2:] == [
        {"role": "tool", "tool_call_id": "toolu_1", "content": "Sunny, 21C"},
        {"role": "tool", "tool_call_id": "toolu_2", "content": "Error: station offline"},
        {"role": "user", "content": [{"type": "text", "text": "Compare them."}]},
    ]


def test_tool_round_trip_on_the_mock(stack: AnthropicStack) -> None:
    client = stack.client()
    ask: list[Any] = [{"role": "user", "content": "Weather?"}]

    first = client.messages.create(
        model="mock-tools", max_tokens=50, messages=ask, tools=[WEATHER_TOOL]
    )
    use = next(b for b in first.content if isinstance(b, ToolUseBlock))
    history: list[Any] = [
        *ask,
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "rainy"}],
        },
    ]
    with client.messages.stream(
        model="mock-tools",
        max_tokens=50,
        messages=history,
        tools=[WEATHER_TOOL],
    ) as stream:
        second = stream.get_final_message()

    assert first.stop_reason == "tool_use"
    assert (use.name, use.input) == ("get_weather", {"city": "Oslo"})
    assert second.stop_reason == "end_turn"
    assert second.content[0].type == "text"
    assert second.content[0].text == "Oslo: rainy"


def test_tool_choice_maps_to_the_openai_upstream(
    stack: AnthropicStack, fresh_fake: FakeOpenAI
) -> None:
    client = stack.client()
    choices: list[Any] = [
        {"type": "auto"},
        {"type": "any"},
        {"type": "tool", "name": "get_weather"},
        {"type": "none"},
        {"type": "auto", "disable_parallel_tool_use": True},
        {"type": "any", "disable_parallel_tool_use": False},
    ]
    for choice in choices:
        client.messages.create(
            model="gpt",
            max_tokens=10,
            messages=HI,
            tools=[WEATHER_TOOL],
            tool_choice=choice,
        )

    sent = [(r.get("tool_choice"), r.get("parallel_tool_calls")) for r in fresh_fake.requests]
    assert sent == [
        ("auto", None),
        ("required", None),
        ({"type": "function", "function": {"name": "get_weather"}}, None),
        ("none", None),
        ("auto", False),
        ("required", True),
    ]


def test_images_become_openai_image_parts(stack: AnthropicStack, fresh_fake: FakeOpenAI) -> None:
    content: list[Any] = [
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0K"},
        },
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
        {"type": "text", "text": "What are these?"},
    ]
    stack.client().messages.create(
        model="gpt", max_tokens=10, messages=[{"role": "user", "content": content}]
    )

    assert fresh_fake.requests[0]["messages"][0]["content"] == [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
        {"type": "text", "text": "What are these?"},
    ]


async def _usage_rows(database_url: str) -> list[UsageRecord]:
    engine = create_engine(database_url)
    try:
        async with session_factory(engine)() as session:
            return list(await session.scalars(select(UsageRecord).order_by(UsageRecord.id)))
    finally:
        await engine.dispose()


def test_usage_rows_are_recorded_for_whole_streamed_and_failed_calls(sqlite_url: str) -> None:
    with running_gateway(sqlite_url, models=[{"name": "mock", "provider": "mock"}]) as gateway:
        key = gateway.create_key("billing-test", ["user"])
        client = anthropic.Anthropic(base_url=gateway.url, api_key=key, max_retries=0)
        client.messages.create(model="mock", max_tokens=50, messages=HI)
        with client.messages.stream(model="mock", max_tokens=50, messages=HI) as stream:
            stream.until_done()
        with pytest.raises(anthropic.NotFoundError):
            client.messages.create(model="absent", max_tokens=50, messages=HI)

    rows = asyncio.run(_usage_rows(sqlite_url))  # flushed on shutdown

    assert [(r.route, r.model, r.provider, r.status_code) for r in rows] == [
        ("/v1/messages", "mock", "mock", 200),
        ("/v1/messages", "mock", "mock", 200),
        ("/v1/messages", "absent", None, 404),
    ]
    assert all(r.key_name == "billing-test" for r in rows)
    assert all(r.prompt_tokens > 0 and r.completion_tokens > 0 for r in rows[:2])


def test_stop_sequence_is_reported_whole_and_streamed(stack: AnthropicStack) -> None:
    client = stack.client()
    ask: list[Any] = [{"role": "user", "content": "one two three"}]

    whole = client.messages.create(
        model="mock", max_tokens=50, messages=ask, stop_sequences=["three", "two"]
    )
    with client.messages.stream(
        model="mock", max_tokens=50, messages=ask, stop_sequences=["two"]
    ) as stream:
        streamed = stream.get_final_message()

    for message in (whole, streamed):
        assert message.content[0].type == "text"
        assert message.content[0].text == "Echo: one "
        assert (message.stop_reason, message.stop_sequence) == ("stop_sequence", "two")


RADAR = "iVBORw0KGgo="


def _image_result_history() -> list[Any]:
    history = _tool_history("toolu_1")[:2]
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": RADAR},
    }
    history.append(
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": "radar:"}, image],
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": "station offline",
                    "is_error": True,
                },
            ],
        }
    )
    return history


def test_an_image_in_a_tool_result_reaches_an_openai_model_after_the_results(
    stack: AnthropicStack, fresh_fake: FakeOpenAI
) -> None:
    """OpenAI refuses images in tool messages: they follow the results in a user message."""
    fresh_fake.queue(FakeReply(text="Clouds."), FakeReply(text="Clouds."))
    client = stack.client()
    history = _image_result_history()

    whole = client.messages.create(
        model="gpt", max_tokens=50, messages=history, tools=[WEATHER_TOOL]
    )
    with client.messages.stream(
        model="gpt", max_tokens=50, messages=history, tools=[WEATHER_TOOL]
    ) as stream:
        streamed = stream.get_final_message()

    assert [b.type for b in whole.content] == [b.type for b in streamed.content] == ["text"]
    for request in fresh_fake.requests:
        sent = request["messages"]
        assert sent[2:4] == [
            {
                "role": "tool",
                "tool_call_id": "toolu_1",
                "content": "radar:\n[1 image in the next user message]",
            },
            {"role": "tool", "tool_call_id": "toolu_2", "content": "Error: station offline"},
        ]
        assert sent[4]["role"] == "user"
        assert sent[4]["content"][-1] == {
            "type": "image_url",
            "image_url": {"url": f"data:image/png;base64,{RADAR}"},
        }


def test_claude_codes_first_request_reaches_an_openai_model(
    stack: AnthropicStack, fresh_fake: FakeOpenAI
) -> None:
    """Claude Code sends a system message inside ``messages`` and asks for adaptive thinking at
    an effort, under its beta headers and ``?beta=true``."""
    fresh_fake.queue(FakeReply(text="Hello"))

    message = stack.client().beta.messages.create(
        model="gpt",
        max_tokens=4000,
        system=[
            {"type": "text", "text": "You are an agent.", "cache_control": {"type": "ephemeral"}}
        ],
        messages=[
            {"role": "user", "content": [{"type": "text", "text": "say hi"}]},
            {"role": "system", "content": [{"type": "text", "text": "# Environment"}]},  # type: ignore[list-item]
        ],
        thinking={"type": "adaptive"},
        betas=["claude-code-20250219", "effort-2025-11-24"],
        extra_body={"output_config": {"effort": "high"}, "context_management": {"edits": []}},
    )

    assert [block.type for block in message.content] == ["text"]
    sent = fresh_fake.requests[0]
    assert [(m["role"], m["content"]) for m in sent["messages"]] == [
        ("system", "You are an agent."),
        ("user", [{"type": "text", "text": "say hi"}]),
        ("system", "# Environment"),
    ]
    assert sent["reasoning_effort"] == "high"
