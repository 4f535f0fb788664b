"""The official OpenAI SDK against the gateway, which calls a wire-faithful fake OpenAI."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from tests.gateway.conftest import UPSTREAM_KEY, Stack
from tests.support.fake_openai import FakeOpenAI, FakeReply, FakeToolCall

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def client(stack: Stack, key: str | None = None) -> openai.OpenAI:
    return openai.OpenAI(base_url=stack.gateway.v1, api_key=key or stack.user_key, max_retries=0)


def test_whole_answer_comes_back_with_usage(stack: Stack, fresh_fake: FakeOpenAI) -> None:
    fresh_fake.queue(FakeReply(text="Hello there", prompt_tokens=12, completion_tokens=3))

    completion = client(stack).chat.completions.create(
        model="gpt", messages=[{"role": "user", "content": "Hi"}], temperature=0.2
    )

    assert completion.choices[0].message.content == "Hello there"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.model == "gpt"
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (12, 3)
    sent = fresh_fake.requests[0]
    assert sent["model"] == "gpt-upstream"
    assert sent["temperature"] == 0.2
    assert sent["messages"] == [{"role": "user", "content": "Hi"}]
    assert fresh_fake.headers[0]["authorization"] == f"Bearer {UPSTREAM_KEY}"


def test_streamed_answer_ends_with_usage_and_done(stack: Stack, fresh_fake: FakeOpenAI) -> None:
    fresh_fake.queue(FakeReply(text="streaming works fine", completion_tokens=4))

    chunks = list(
        client(stack).chat.completions.create(
            model="gpt",
            messages=[{"role": "user", "content": "Hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )

    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "streaming works fine"
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == 4


def test_a_caller_who_leaves_mid_stream_frees_the_upstream(
    stack: Stack, fresh_fake: FakeOpenAI
) -> None:
    fresh_fake.client_left.clear()
    fresh_fake.queue(FakeReply(text="one two three four", stall_after=3))

    chunks = client(stack).chat.completions.create(
        model="gpt", messages=[{"role": "user", "content": "Hi"}], stream=True
    )
    first = next(iter(chunks))
    chunks.close()  # the caller goes away while the upstream still holds its stream open

    assert first.choices[0].delta.role == "assistant"
    assert fresh_fake.client_left.wait(10), "the gateway kept the upstream stream open"


def test_stream_without_include_usage_sends_no_usage_chunk(
    stack: Stack, fresh_fake: FakeOpenAI
) -> None:
    fresh_fake.queue(FakeReply(text="short"))

    chunks = list(
        client(stack).chat.completions.create(
            model="gpt", messages=[{"role": "user", "content": "Hi"}], stream=True
        )
    )

    assert all(c.usage is None for c in chunks)
    assert all(c.choices for c in chunks)


def test_client_tools_pass_through_and_calls_come_back(
    stack: Stack, fresh_fake: FakeOpenAI
) -> None:
    fresh_fake.queue(
        FakeReply(
            tool_calls=[
                FakeToolCall("get_weather", {"city": "Oslo"}),
                FakeToolCall("get_weather", {"city": "Lima"}),
            ]
        )
    )

    completion = client(stack).chat.completions.create(
        model="gpt",
        messages=[{"role": "user", "content": "Weather in Oslo and Lima?"}],
        tools=[WEATHER_TOOL],  # type: ignore[list-item]
        tool_choice="required",
        parallel_tool_calls=True,
    )

    sent = fresh_fake.requests[0]
    assert sent["tools"][0]["function"]["name"] == "get_weather"
    assert sent["tool_choice"] == "required"
    assert sent["parallel_tool_calls"] is True
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls or []
    assert [json.loads(c.function.arguments) for c in calls] == [{"city": "Oslo"}, {"city": "Lima"}]  # type: ignore[union-attr]
    assert len({c.id for c in calls}) == 2


def test_streamed_tool_call_deltas_reassemble(stack: Stack, fresh_fake: FakeOpenAI) -> None:
    fresh_fake.queue(FakeReply(tool_calls=[FakeToolCall("get_weather", {"city": "São Paulo"})]))

    stream = client(stack).chat.completions.create(
        model="gpt",
        messages=[{"role": "user", "content": "Weather?"}],
        tools=[WEATHER_TOOL],  # type: ignore[list-item]
        stream=True,
    )
    arguments = ""
    names = []
    finish = None
    for chunk in stream:
        for call in chunk.choices[0].delta.tool_calls or []:
            if call.function and call.function.name:
                names.append(call.function.name)
            arguments += (call.function.arguments or "") if call.function else ""
        finish = chunk.choices[0].finish_reason or finish

    assert names == ["get_weather"]
    assert json.loads(arguments) == {"city": "São Paulo"}
    assert finish == "tool_calls"


def test_tool_results_in_history_reach_the_upstream(stack: Stack, fresh_fake: FakeOpenAI) -> None:
    fresh_fake.queue(FakeReply(text="It is sunny in Oslo."))

    completion = client(stack).chat.completions.create(
        model="gpt",
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Oslo?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        ],
        tools=[WEATHER_TOOL],  # type: ignore[list-item]
    )

    assert completion.choices[0].message.content == "It is sunny in Oslo."
    history = fresh_fake.requests[0]["messages"]
    assert history[2]["tool_calls"][0]["function"] == {
        "name": "get_weather",
        "arguments": '{"city":"Oslo"}',
    }
    assert history[3] == {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}


def _tool_round(content: Any) -> list[Any]:
    return [
        {"role": "user", "content": "Radar over Oslo?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": content},
    ]


@pytest.mark.parametrize("stream", [False, True])
def test_a_tool_message_of_text_parts_reaches_the_upstream_as_its_text(
    stack: Stack, fresh_fake: FakeOpenAI, stream: bool
) -> None:
    fresh_fake.queue(FakeReply(text="Clear."))
    parts = [{"type": "text", "text": "clear "}, {"type": "text", "text": "skies"}]

    answer = client(stack).chat.completions.create(
        model="gpt", messages=_tool_round(parts), tools=[WEATHER_TOOL], stream=stream
    )

    if stream:
        assert "".join(c.choices[0].delta.content or "" for c in answer if c.choices) == "Clear."
    else:
        assert answer.choices[0].message.content == "Clear."
    sent = fresh_fake.requests[0]["messages"][2]
    assert sent == {"role": "tool", "tool_call_id": "call_1", "content": "clear skies"}


@pytest.mark.parametrize("stream", [False, True])
def test_an_image_in_a_tool_message_is_refused_naming_its_place(
    stack: Stack, fresh_fake: FakeOpenAI, stream: bool
) -> None:
    """As OpenAI refuses it: the caller sends the image in a user message after the results."""
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    parts = [{"type": "text", "text": "radar:"}, image]

    with pytest.raises(openai.BadRequestError) as caught:
        client(stack).chat.completions.create(
            model="gpt", messages=_tool_round(parts), tools=[WEATHER_TOOL], stream=stream
        )

    error = caught.value.body
    assert isinstance(error, dict)
    assert error["param"] == "messages[2].content[1]"
    assert "`user` message" in error["message"]
    assert fresh_fake.requests == []


def test_upstream_error_maps_to_typed_error(stack: Stack, fresh_fake: FakeOpenAI) -> None:
    fresh_fake.queue(
        FakeReply(
            status=429,
            error={"message": "slow down", "type": "requests", "code": "rate_limit_exceeded"},
            headers={"retry-after": "7"},
        )
    )

    with pytest.raises(openai.RateLimitError) as caught:
        client(stack).chat.completions.create(
            model="gpt", messages=[{"role": "user", "content": "Hi"}]
        )

    assert caught.value.response.headers["retry-after"] == "7"
    assert "slow down" in caught.value.message


def test_upstream_auth_failure_is_a_bad_gateway_not_the_callers_401(
    stack: Stack, fresh_fake: FakeOpenAI
) -> None:
    fresh_fake.queue(FakeReply(status=401, error={"message": "bad key", "type": "auth"}))

    with pytest.raises(openai.APIStatusError) as caught:
        client(stack).chat.completions.create(
            model="gpt", messages=[{"role": "user", "content": "Hi"}]
        )

    assert caught.value.status_code == 502
    assert UPSTREAM_KEY not in caught.value.response.text


def test_mock_model_echoes_and_streams_identically(stack: Stack) -> None:
    gateway = client(stack)
    messages = [{"role": "user", "content": "ping pong"}]

    whole = gateway.chat.completions.create(model="mock", messages=messages)  # type: ignore[arg-type]
    streamed = gateway.chat.completions.create(model="mock", messages=messages, stream=True)  # type: ignore[arg-type]

    text = "".join(c.choices[0].delta.content or "" for c in streamed)
    assert whole.choices[0].message.content == "Echo: ping pong"
    assert text == whole.choices[0].message.content


def test_request_id_is_echoed(stack: Stack) -> None:
    raw = client(stack).chat.completions.with_raw_response.create(
        model="mock",
        messages=[{"role": "user", "content": "x"}],
        extra_headers={"X-Request-ID": "trace-123"},
    )
    assert raw.headers["x-request-id"] == "trace-123"
