"""Anthropic specifics: thinking blocks through history, max_tokens, tool_result ordering."""

from __future__ import annotations

import pytest

from adapters.anthropic_format import DEFAULT_MAX_TOKENS
from llm_service.types import (
    AssistantMessage,
    ChatRequest,
    SamplingParams,
    Thinking,
    ThinkingDelta,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from tests.adapters.conformance import MODES, Target, run
from tests.support.fake_anthropic import FakeThinking
from tests.support.fake_openai import FakeReply, FakeToolCall

# The adapters (and their SDK clients) are shared: every test runs on the session loop.
pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest.mark.parametrize("mode", MODES)
async def test_thinking_comes_back_with_its_signature(anthropic: Target, mode: str) -> None:
    fake = anthropic.fake
    fake.thinking = [FakeThinking("Let me think.", "sig-123")]  # type: ignore[attr-defined]
    try:
        anthropic.queue(FakeReply(text="42", tool_calls=[FakeToolCall("get_time", {})]))
        response, deltas = await run(anthropic.adapter(), ChatRequest((UserMessage("?"),)), mode)
    finally:
        fake.thinking = []  # type: ignore[attr-defined]

    # Marked with the model that signed it: only that model takes it back.
    signed = Thinking("Let me think.", signature="sig-123", model="claude-x")
    assert response.message.thinking == (signed,)
    assert response.message.content == "42"
    if mode == "stream":
        assert ThinkingDelta("Let me think.") in deltas


async def test_thinking_is_carried_back_in_history(anthropic: Target) -> None:
    history = (
        UserMessage("What time is it?"),
        AssistantMessage(
            tool_calls=(ToolCall("toolu_1", "get_time", {}),),
            thinking=(
                Thinking("plan", signature="sig-1"),
                Thinking("opaque", redacted=True),
                Thinking("unsigned, from another provider"),
            ),
        ),
        ToolResultMessage("toolu_1", "noon"),
        UserMessage("Thanks"),
    )
    anthropic.queue(FakeReply(text="ok"))

    await run(anthropic.adapter(), ChatRequest(history), "whole")

    sent = anthropic.sent
    assert sent["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "plan", "signature": "sig-1"},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "tool_use", "id": "toolu_1", "name": "get_time", "input": {}},
    ]
    # The result opens the next user turn, before the user's text.
    assert [b["type"] for b in sent["messages"][2]["content"]] == ["tool_result", "text"]
    assert sent["max_tokens"] == DEFAULT_MAX_TOKENS


async def test_callers_max_tokens_wins(anthropic: Target) -> None:
    anthropic.queue(FakeReply(text="ok"))
    request = ChatRequest((UserMessage("Hi"),), params=SamplingParams(max_tokens=50))

    await run(anthropic.adapter(), request, "whole")

    assert anthropic.sent["max_tokens"] == 50


@pytest.mark.parametrize("mode", MODES)
async def test_sampling_reaches_anthropic(anthropic: Target, mode: str) -> None:
    """The SDK has no arguments for them any more; the API still takes them."""
    anthropic.queue(FakeReply(text="ok"))
    request = ChatRequest((UserMessage("Hi"),), params=SamplingParams(temperature=0.3, top_p=0.9))

    response, _ = await run(anthropic.adapter(), request, mode)

    assert response.message.content == "ok"
    assert (anthropic.sent["temperature"], anthropic.sent["top_p"]) == (0.3, 0.9)
