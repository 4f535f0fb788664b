"""``POST /v1/messages/count_tokens`` through the Anthropic SDK: counted here, sent nowhere."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from tests.gateway.anthropic_api.conftest import WEATHER_TOOL, AnthropicStack
from tests.support.fake_openai import FakeOpenAI

HI: list[Any] = [{"role": "user", "content": "Hi"}]


def test_counts_grow_with_the_conversation_and_its_tools(
    stack: AnthropicStack, fresh_fake: FakeOpenAI
) -> None:
    client = stack.client()
    longer: list[Any] = [
        *HI,
        {"role": "assistant", "content": "Hello! How can I help you today?"},
        {"role": "user", "content": [{"type": "text", "text": "What is the weather in Oslo?"}]},
    ]

    short = client.messages.count_tokens(model="gpt", messages=HI)
    long = client.messages.count_tokens(model="gpt", messages=longer)
    tooled = client.messages.count_tokens(model="gpt", messages=longer, tools=[WEATHER_TOOL])
    with_system = client.beta.messages.count_tokens(
        model="gpt",
        system="You are terse.",
        messages=[*HI, {"role": "system", "content": "Be kind."}],  # type: ignore[list-item]
        betas=["claude-code-20250219"],
    )

    assert 0 < short.input_tokens < long.input_tokens < tooled.input_tokens
    assert with_system.input_tokens > short.input_tokens
    assert fresh_fake.requests == []  # nothing went to the model


def test_a_model_the_key_may_not_use_is_refused_in_anthropics_shape(
    stack: AnthropicStack,
) -> None:
    client = stack.client()

    with pytest.raises(anthropic.NotFoundError) as unknown:
        client.messages.count_tokens(model="no-such-model", messages=HI)
    with pytest.raises(anthropic.PermissionDeniedError):
        client.messages.count_tokens(model="analyst-only", messages=HI)
    with pytest.raises(anthropic.AuthenticationError):
        stack.client("gw-not-a-key").messages.count_tokens(model="gpt", messages=HI)

    assert unknown.value.body == {
        "type": "error",
        "error": {"type": "not_found_error", "message": unknown.value.body["error"]["message"]},
    }
