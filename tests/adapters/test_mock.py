"""The mock provider: deterministic, scriptable, streamed exactly like whole."""

from __future__ import annotations

import pytest

from adapters.mock import MockAdapter
from llm_service.config import ModelConfig
from llm_service.errors import UpstreamRateLimited
from llm_service.types import (
    AssistantMessage,
    ChatRequest,
    SamplingParams,
    StreamDone,
    TextDelta,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

SCRIPT = {
    "name": "scripted",
    "provider": "mock",
    "script": [
        {"tool_calls": [{"name": "get_time", "arguments": {"tz": "UTC"}}]},
        {"text": "It is {last_tool_result}. You asked: {last_user_message}"},
    ],
}


def adapter(config: dict[str, object]) -> MockAdapter:
    return MockAdapter(ModelConfig.model_validate(config))


async def test_echoes_without_a_script() -> None:
    response = await adapter({"name": "m", "provider": "mock"}).complete(
        ChatRequest(messages=(UserMessage("hello"),))
    )
    assert response.message.content == "Echo: hello"
    assert response.usage.prompt_tokens > 0
    assert response.finish_reason == "stop"


async def test_script_advances_within_a_turn() -> None:
    mock = adapter(SCRIPT)
    first = await mock.complete(ChatRequest(messages=(UserMessage("time?"),)))
    assert first.finish_reason == "tool_calls"
    call = first.message.tool_calls[0]
    assert (call.name, call.arguments) == ("get_time", {"tz": "UTC"})

    second = await mock.complete(
        ChatRequest(
            messages=(
                UserMessage("time?"),
                AssistantMessage(tool_calls=(ToolCall(call.id, call.name, call.arguments),)),
                ToolResultMessage(call.id, "12:00"),
            )
        )
    )
    assert second.message.content == "It is 12:00. You asked: time?"


async def test_stream_matches_whole_answer() -> None:
    mock = adapter(SCRIPT)
    request = ChatRequest(messages=(UserMessage("time?"),))
    events = [e async for e in mock.stream(request)]
    assert isinstance(events[-1], StreamDone)
    assert events[-1].response == await mock.complete(request)


async def test_streamed_text_concatenates() -> None:
    mock = adapter({"name": "m", "provider": "mock"})
    events = [e async for e in mock.stream(ChatRequest(messages=(UserMessage("a b c"),)))]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Echo: a b c"


async def test_scripted_error() -> None:
    mock = adapter(
        {"name": "m", "provider": "mock", "script": [{"error": {"status": 429, "message": "x"}}]}
    )
    with pytest.raises(UpstreamRateLimited):
        await mock.complete(ChatRequest(messages=(UserMessage("hi"),)))


async def test_max_tokens_truncates_with_length() -> None:
    mock = adapter({"name": "m", "provider": "mock"})
    response = await mock.complete(
        ChatRequest(messages=(UserMessage("x" * 400),), params=SamplingParams(max_tokens=5))
    )
    assert response.finish_reason == "length"
    assert response.usage.completion_tokens == 5


async def test_answer_stops_before_the_earliest_stop_sequence() -> None:
    adapter = MockAdapter(ModelConfig(name="m", provider="mock"))
    request = ChatRequest(
        messages=(UserMessage("alpha beta gamma"),),
        params=SamplingParams(stop=("gamma", "beta", "zzz")),
    )

    response = await adapter.complete(request)

    assert response.message.content == "Echo: alpha "
    assert response.stop_sequence == "beta"
    assert response.finish_reason == "stop"


async def test_a_growing_conversation_is_estimated_as_if_counted_whole() -> None:
    """Each call counts only the messages after those an earlier call counted: the estimate is
    the same as a fresh adapter's, which counts them all."""
    growing = adapter({"name": "m", "provider": "mock"})
    history: list[UserMessage | AssistantMessage] = []
    for turn in range(5):
        history += [UserMessage(f"question number {turn} " * turn)]
        request = ChatRequest(messages=tuple(history))
        counted = (await growing.complete(request)).usage.prompt_tokens
        fresh = adapter({"name": "m", "provider": "mock"})
        assert counted == (await fresh.complete(request)).usage.prompt_tokens
        history.append(AssistantMessage(content=f"answer {turn}"))
    # Another conversation's messages in between: counted whole, correctly.
    other = ChatRequest(messages=(UserMessage("elsewhere"), *history[1:]))
    counted = (await growing.complete(other)).usage.prompt_tokens
    fresh = adapter({"name": "m", "provider": "mock"})
    assert counted == (await fresh.complete(other)).usage.prompt_tokens
