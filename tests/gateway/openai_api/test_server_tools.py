"""`server_tools: true`: the OpenAI SDK sees only the final answer of a server-side tool loop."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from tests.chat_service.test_tool_loop import conversation, decide, follow
from tests.support.fake_openai import FakeOpenAI, FakeReply, FakeToolCall
from tests.support.gateway import running_gateway
from tests.support.tool_loop import TRUSTED_LOCAL_TOOLS, LoopStack, make_catalog


def sdk(stack: LoopStack) -> openai.OpenAI:
    return openai.OpenAI(base_url=stack.gateway.v1, api_key=stack.user_key, max_retries=0)


def test_server_side_tools_return_the_final_answer(loop_stack: LoopStack) -> None:
    raw = sdk(loop_stack).chat.completions.with_raw_response.create(
        model="time-server", messages=[{"role": "user", "content": "What time is it?"}]
    )
    completion = raw.parse()

    assert completion.choices[0].message.content == "It is 12:00 UTC."
    assert completion.choices[0].message.tool_calls is None
    assert loop_stack.catalog.calls == [("get_time", {})]
    history = conversation(loop_stack, raw.headers["x-gateway-conversation-id"])
    assert [m["role"] for m in history["messages"]] == ["user", "assistant", "tool", "assistant"]


def test_server_side_tools_stream_the_final_answer(loop_stack: LoopStack) -> None:
    chunks = list(
        sdk(loop_stack).chat.completions.create(
            model="time-server", messages=[{"role": "user", "content": "time?"}], stream=True
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "It is 12:00 UTC."


def test_a_call_awaiting_approval_answers_with_the_conversation_to_follow(
    loop_stack: LoopStack,
) -> None:
    raw = sdk(loop_stack).chat.completions.with_raw_response.create(
        model="loop-server", messages=[{"role": "user", "content": "pay"}]
    )
    conversation_id = raw.headers["x-gateway-conversation-id"]
    assert conversation_id in (raw.parse().choices[0].message.content or "")
    assert loop_stack.catalog.calls == []

    [call] = conversation(loop_stack, conversation_id)["tool_calls"]
    assert decide(loop_stack, call["record_id"], "approve").status_code == 200
    follow(loop_stack, conversation_id)

    assert (
        conversation(loop_stack, conversation_id)["messages"][-1]["content"] == "Done: transferred"
    )


@pytest.fixture
def upstream_loop(
    database_url: str, fake_openai: tuple[FakeOpenAI, str]
) -> Iterator[tuple[openai.OpenAI, FakeOpenAI]]:
    """A `server_tools` model served by the OpenAI fake, one attempt per call."""
    fake, url = fake_openai
    model = {
        "name": "vision-tools",
        "provider": "openai",
        "model": "gpt-x",
        "base_url": url,
        "api_key_env": "UP_KEY",
        "server_tools": True,
        "retry": {"max_attempts": 1},
    }
    with running_gateway(
        database_url,
        environ={"UP_KEY": "sk-up"},
        tools=make_catalog(),
        tool_pinning=TRUSTED_LOCAL_TOOLS,
        models=[model],
    ) as gateway:
        key = gateway.create_key("team", ["user"])
        yield openai.OpenAI(base_url=gateway.v1, api_key=key, max_retries=0), fake


def test_the_model_sees_the_image_in_the_users_message(
    upstream_loop: tuple[openai.OpenAI, FakeOpenAI],
) -> None:
    client, fake = upstream_loop
    fake.queue(
        FakeReply(tool_calls=[FakeToolCall("get_time", {})]), FakeReply(text="A cat, at noon.")
    )
    image = "data:image/png;base64,iVBORw0KGgo="

    completion = client.chat.completions.create(
        model="vision-tools",
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is this?"},
                    {"type": "image_url", "image_url": {"url": image, "detail": "low"}},
                ],
            }
        ],
    )

    assert completion.choices[0].message.content == "A cat, at noon."
    # Both model calls, the one after the tool round too, carry the image.
    for sent in fake.requests:
        assert sent["messages"][0]["content"][1] == {
            "type": "image_url",
            "image_url": {"url": image, "detail": "low"},
        }


def test_an_upstream_rate_limit_is_a_429_with_retry_after(
    upstream_loop: tuple[openai.OpenAI, FakeOpenAI],
) -> None:
    client, fake = upstream_loop
    error = {"message": "slow down", "type": "requests", "code": "rate_limit_exceeded"}
    fake.queue(FakeReply(status=429, error=error, headers={"retry-after": "7"}))

    with pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(
            model="vision-tools", messages=[{"role": "user", "content": "time?"}]
        )

    assert caught.value.response.headers["retry-after"] == "7"
    assert caught.value.code == "upstream_rate_limited"
    assert "slow down" in caught.value.message
