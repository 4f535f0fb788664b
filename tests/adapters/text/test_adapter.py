"""The wrapping adapter over the real OpenAI adapter and the wire-faithful fake upstream."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from adapters.openai import OpenAIAdapter
from adapters.text.adapter import TextToolsAdapter, with_text_tools
from adapters.text.select import FORMATS
from llm_service.config import ModelConfig
from llm_service.types import (
    AssistantMessage,
    ChatRequest,
    ChatResponse,
    Message,
    StreamDone,
    StreamEvent,
    SystemMessage,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolChoice,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from tests.support.fake_openai import FakeOpenAI, FakeReply

WEATHER = ToolSpec(
    "get_weather", "Weather for a city", {"type": "object", "properties": {"city": {}}}
)
HERMES_CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>'


def ask(*messages: Message, tool_choice: ToolChoice | None = None) -> ChatRequest:
    return ChatRequest(
        messages=messages or (UserMessage("Weather in Oslo?"),),
        tools=(WEATHER,),
        tool_choice=tool_choice,
    )


@pytest.fixture
async def upstream(
    fake_openai: tuple[FakeOpenAI, str],
) -> AsyncIterator[tuple[FakeOpenAI, OpenAIAdapter]]:
    fake, url = fake_openai
    inner = OpenAIAdapter(ModelConfig(name="qwen", provider="openai", base_url=url), "k")
    yield fake, inner
    await inner.aclose()


def hermes(inner: OpenAIAdapter) -> TextToolsAdapter:
    return TextToolsAdapter(inner, FORMATS["hermes"])


async def collect(
    adapter: TextToolsAdapter, request: ChatRequest
) -> tuple[list[StreamEvent], ChatResponse]:
    events = [e async for e in adapter.stream(request)]
    done = events[-1]
    assert isinstance(done, StreamDone)
    assert not any(isinstance(e, StreamDone) for e in events[:-1])
    return events[:-1], done.response


async def test_calls_come_back_native_and_no_tools_are_sent(
    upstream: tuple[FakeOpenAI, OpenAIAdapter],
) -> None:
    fake, inner = upstream
    fake.queue(FakeReply(text=f"Let me check.\n{HERMES_CALL}"))

    response = await hermes(inner).complete(ask(SystemMessage("Be brief.")))

    assert response.finish_reason == "tool_calls"
    assert response.message.content == "Let me check."
    [call] = response.message.tool_calls
    assert (call.name, call.arguments) == ("get_weather", {"city": "Oslo"})
    assert call.id.startswith("call_")
    sent = fake.requests[0]
    assert "tools" not in sent
    assert "tool_choice" not in sent
    system = sent["messages"][0]
    assert system["role"] == "system"
    assert system["content"].startswith("Be brief.\n\n# Tools")
    assert '"name": "get_weather"' in system["content"]


async def test_stream_emits_native_deltas_and_matches_complete(
    upstream: tuple[FakeOpenAI, OpenAIAdapter],
) -> None:
    fake, inner = upstream
    text = f"<think>hmm</think>Checking.{HERMES_CALL}{HERMES_CALL.replace('Oslo', 'Lima')}"
    fake.queue(FakeReply(text=text), FakeReply(text=text))
    adapter = hermes(inner)

    events, streamed = await collect(adapter, ask())
    whole = await adapter.complete(ask())

    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assert [d.index for d in deltas] == [0, 1]
    assert len({d.id for d in deltas}) == 2
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Checking."
    assert streamed.finish_reason == whole.finish_reason == "tool_calls"
    assert streamed.message.content == whole.message.content == "Checking."
    assert [(c.name, c.arguments) for c in streamed.message.tool_calls] == [
        (c.name, c.arguments) for c in whole.message.tool_calls
    ]
    assert [t.text for t in streamed.message.thinking] == ["hmm"]
    assert streamed.usage == whole.usage


async def test_unparseable_text_is_returned_unchanged(
    upstream: tuple[FakeOpenAI, OpenAIAdapter],
) -> None:
    fake, inner = upstream
    text = '<tool_call>{"name": "rm", "arguments": {}}</tool_call> and <tool_call>{"name'
    fake.queue(FakeReply(text=text), FakeReply(text=text))
    adapter = hermes(inner)

    whole = await adapter.complete(ask())
    _, streamed = await collect(adapter, ask())

    for response in (whole, streamed):
        assert response.message.content == text
        assert response.message.tool_calls == ()
        assert response.finish_reason == "stop"


async def test_history_is_rendered_as_the_family_writes_it(
    upstream: tuple[FakeOpenAI, OpenAIAdapter],
) -> None:
    fake, inner = upstream
    fake.queue(FakeReply(text="Sunny in both."))
    history = (
        UserMessage("Weather in Oslo and Lima?"),
        AssistantMessage(
            "Checking.",
            (
                ToolCall("call_1", "get_weather", {"city": "Oslo"}),
                ToolCall("call_2", "get_weather", {"city": "Lima"}),
            ),
        ),
        ToolResultMessage("call_1", "sunny"),
        ToolResultMessage("call_2", "sunny too"),
    )

    response = await hermes(inner).complete(ask(*history))

    assert response.message.content == "Sunny in both."
    messages = fake.requests[0]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assistant = messages[2]
    assert "tool_calls" not in assistant
    assert assistant["content"].startswith("Checking.\n<tool_call>\n")
    assert assistant["content"].count("<tool_call>") == 2
    assert messages[3]["content"] == (
        "<tool_response>\nsunny\n</tool_response>\n<tool_response>\nsunny too\n</tool_response>"
    )


async def test_llama3_results_stay_tool_messages_for_the_ipython_role(
    upstream: tuple[FakeOpenAI, OpenAIAdapter],
) -> None:
    fake, inner = upstream
    fake.queue(FakeReply(text="Sunny."))
    history = (
        UserMessage("Weather?"),
        AssistantMessage(None, (ToolCall("call_1", "get_weather", {"city": "Oslo"}),)),
        ToolResultMessage("call_1", '{"sky": "clear"}'),
    )

    await TextToolsAdapter(inner, FORMATS["llama3"]).complete(ask(*history))

    messages = fake.requests[0]["messages"]
    assert messages[2] == {
        "role": "assistant",
        "content": '{"name": "get_weather", "parameters": {"city": "Oslo"}}',
    }
    assert messages[3] == {"role": "tool", "tool_call_id": "call_1", "content": '{"sky": "clear"}'}


async def test_tool_choice_none_offers_and_parses_no_tools(
    upstream: tuple[FakeOpenAI, OpenAIAdapter],
) -> None:
    fake, inner = upstream
    fake.queue(FakeReply(text=HERMES_CALL))

    response = await hermes(inner).complete(ask(tool_choice="none"))

    assert response.message.content == HERMES_CALL
    assert response.message.tool_calls == ()
    assert fake.requests[0]["messages"][0]["role"] == "user"


async def test_stream_done_is_assembled_from_what_was_streamed(
    upstream: tuple[FakeOpenAI, OpenAIAdapter],
) -> None:
    fake, inner = upstream
    fake.queue(FakeReply(text=f"  {HERMES_CALL}  ", completion_tokens=9))

    events, response = await collect(hermes(inner), ask())

    [delta] = [e for e in events if isinstance(e, ToolCallDelta)]
    [call] = response.message.tool_calls
    assert (call.id, call.name, json.loads(delta.arguments)) == (
        delta.id,
        delta.name,
        call.arguments,
    )
    assert response.message.content is None
    assert response.usage.completion_tokens == 9


def test_only_non_native_models_are_wrapped(fake_openai: tuple[FakeOpenAI, str]) -> None:
    _, url = fake_openai
    native = ModelConfig(name="gpt", provider="openai", base_url=url)
    auto = ModelConfig(name="local", model="Qwen/Qwen2.5-7B", provider="openai", tool_format="auto")
    inner = OpenAIAdapter(native, "k")

    assert with_text_tools(native, inner) is inner
    wrapped = with_text_tools(auto, inner)
    assert isinstance(wrapped, TextToolsAdapter)
    assert wrapped.format.name == "hermes"
    assert wrapped.provider == "openai"


async def test_model_entry_reasoning_makes_the_reply_reasoning_up_to_its_closing_tag(
    upstream: tuple[FakeOpenAI, OpenAIAdapter],
) -> None:
    fake, inner = upstream
    config = ModelConfig(name="qwq", provider="openai", tool_format="hermes", reasoning=True)
    adapter = with_text_tools(config, inner)
    draft = '<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call>'
    fake.queue(FakeReply(text=f"Maybe {draft}? No, Oslo.\n</think>\n\n{HERMES_CALL}"))

    events, response = await collect(adapter, ask())

    # The draft inside reasoning is not a call; the reasoning is thinking, never content.
    assert not any(isinstance(e, TextDelta) for e in events)
    assert [c.arguments for c in response.message.tool_calls] == [{"city": "Oslo"}]
    assert response.message.content is None
    assert [t.text for t in response.message.thinking] == [f"Maybe {draft}? No, Oslo.\n"]


async def test_model_entry_reasoning_tag_names_the_tags(
    upstream: tuple[FakeOpenAI, OpenAIAdapter],
) -> None:
    fake, inner = upstream
    config = ModelConfig(name="m", provider="openai", tool_format="hermes", reasoning="[THINK]")
    fake.queue(FakeReply(text="Sunny, surely.[/THINK]It is sunny."))

    response = await with_text_tools(config, inner).complete(ask())

    assert response.message.content == "It is sunny."
    assert [t.text for t in response.message.thinking] == ["Sunny, surely."]


async def test_recovered_calls_must_fit_the_declared_schema(
    upstream: tuple[FakeOpenAI, OpenAIAdapter],
) -> None:
    fake, inner = upstream
    strict = ToolSpec(
        "get_weather",
        "Weather for a city",
        {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    )
    misfit = 'For example {"name": "get_weather", "arguments": {"town": "Oslo"}} works.'
    fitting = 'Sure. {"name": "get_weather", "arguments": {"city": "Oslo"}} Done.'
    fake.queue(FakeReply(text=misfit))
    fake.queue(FakeReply(text=fitting))
    request = ChatRequest(messages=(UserMessage("Weather?"),), tools=(strict,))

    kept = await hermes(inner).complete(request)
    events, recovered = await collect(hermes(inner), request)

    assert (kept.message.content, kept.message.tool_calls) == (misfit, ())
    assert [c.arguments for c in recovered.message.tool_calls] == [{"city": "Oslo"}]
    assert recovered.message.content == "Sure. Done."
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Sure. Done."


@pytest.mark.parametrize(
    ("reasoning", "problem"),
    [(True, "text tool formats"), ("think", "opening tag")],
)
def test_reasoning_is_checked_in_the_model_entry(reasoning: bool | str, problem: str) -> None:
    fmt = "native" if reasoning is True else "hermes"
    with pytest.raises(ValueError, match=problem):
        ModelConfig(name="m", provider="openai", tool_format=fmt, reasoning=reasoning)
