"""Whole and streamed replies agree, field by field, for every reply the fakes can give.

Each reply below is asked for twice through each adapter and its wire-faithful fake (official
SDKs, real HTTP): once whole, once streamed. Content, reasoning, tool calls, finish reason,
usage, model and stop sequence must be equal, and the streamed deltas must add up to the final
response. The replies cover every shape the fakes produce (text, unicode, reasoning, one,
parallel and argument-less calls, nested arguments, renamed tools, a cut answer, the usage
breakdown); raw-text models add calls and reasoning written in the text.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest
import pytest_asyncio

from adapters.naming import wire_tool_name
from adapters.openai import OpenAIAdapter
from adapters.text.adapter import TextToolsAdapter
from adapters.text.select import FORMATS
from llm_service.config import ModelConfig
from llm_service.types import (
    ChatAdapter,
    ChatRequest,
    ChatResponse,
    SamplingParams,
    StreamEvent,
    TextDelta,
    Thinking,
    ThinkingDelta,
    ToolCallDelta,
    ToolSpec,
    UserMessage,
)
from tests.adapters.conformance import PROVIDERS, Target, run
from tests.support.fake_anthropic import FakeThinking
from tests.support.fake_openai import FakeOpenAI, FakeReply, FakeToolCall
from tests.support.servers import serve

pytestmark = pytest.mark.asyncio(loop_scope="session")

OBJECT = {"type": "object", "properties": {}}
DOTTED = "files.read/v2"
TOOLS = (
    ToolSpec("get_weather", "Weather for a city", OBJECT),
    ToolSpec("get_time", "The current time", OBJECT),
    ToolSpec("search", "Search documents", OBJECT),
    ToolSpec(DOTTED, "Read a file", OBJECT),
)
ASK = ChatRequest(
    messages=(UserMessage("Weather in Paris?"),), tools=TOOLS, params=SamplingParams(stop=("##",))
)


def _call(name: str, arguments: dict[str, Any], number: int = 0) -> FakeToolCall:
    return FakeToolCall(name, arguments, id=f"call_{name.replace('.', '_')}_{number}")


REPLIES: dict[str, FakeReply] = {
    "text": FakeReply(text="Hello there", prompt_tokens=12, completion_tokens=3),
    "unicode text": FakeReply(text='Ünïcødé ✓ — 東京は雨 🌧\n"quoted" \\ back'),
    "one call": FakeReply(tool_calls=[_call("get_weather", {"city": "Paris"})]),
    "call without arguments": FakeReply(tool_calls=[_call("get_time", {})]),
    "parallel calls": FakeReply(
        tool_calls=[_call("get_weather", {"city": c}, n) for n, c in enumerate(["Oslo", "Lima"])]
        + [_call("get_time", {}, 2)]
    ),
    "text then a call": FakeReply(
        text="Let me look.", tool_calls=[_call("get_weather", {"city": "São Paulo"})]
    ),
    "nested arguments": FakeReply(
        tool_calls=[
            _call(
                "search",
                {"query": 'naïve "q"', "filter": {"tags": ["a", "b"], "limit": None}, "n": 2.5},
            )
        ]
    ),
    "renamed tool": FakeReply(tool_calls=[_call(wire_tool_name(DOTTED), {"path": "/etc"})]),
    "reasoning then text": FakeReply(text="It is sunny.", reasoning="The user wants Paris."),
    "reasoning then a call": FakeReply(
        reasoning="I should look it up.", tool_calls=[_call("get_weather", {"city": "Rome"})]
    ),
    "cut at the token limit": FakeReply(text="A long answer that was cut", finish_reason="length"),
    "stopped by a stop sequence": FakeReply(text="Done.", finish_reason="stop_sequence"),
    "usage breakdown": FakeReply(
        text="ok",
        prompt_tokens=100,
        completion_tokens=50,
        cached_tokens=40,
        cache_write_tokens=10,
        reasoning_tokens=20,
    ),
}
# Each provider's own word for the token limit and a stop sequence (Anthropic's alone says).
FINISH = {
    "length": {"openai": "length", "ollama": "length", "anthropic": "max_tokens"},
    "stop_sequence": {"openai": "stop", "ollama": "stop", "anthropic": "stop_sequence"},
}
# Ollama's calls carry no id: the adapter mints one per call, so only their shape can agree.
MINTS_IDS = {"ollama"}


def _for(provider: str, reply: FakeReply) -> FakeReply:
    if reply.finish_reason is None:
        return reply
    wire = FINISH[reply.finish_reason]["openai" if provider == "litellm" else provider]
    return replace(reply, finish_reason=wire)


def _fields(response: ChatResponse, minted_ids: bool) -> dict[str, Any]:
    message = response.message
    ids: Any = [c.id for c in message.tool_calls]
    if minted_ids:
        ids = (len(ids), len(set(ids)), all(ids))
    return {
        "content": message.content,
        "reasoning": message.thinking,
        "tool calls": [(c.name, c.arguments, c.raw_arguments) for c in message.tool_calls],
        "tool call ids": ids,
        "finish reason": response.finish_reason,
        "usage": response.usage,
        "model": response.model,
        "stop sequence": response.stop_sequence,
    }


def _assert_deltas_add_up(deltas: list[StreamEvent], response: ChatResponse) -> None:
    message = response.message
    text = "".join(d.text for d in deltas if isinstance(d, TextDelta))
    assert (text or None) == message.content
    thinking = "".join(d.text for d in deltas if isinstance(d, ThinkingDelta))
    assert thinking == "".join(t.text for t in message.thinking if not t.redacted)
    arguments: dict[int, str] = {}
    for delta in deltas:
        if isinstance(delta, ToolCallDelta):
            arguments[delta.index] = arguments.get(delta.index, "") + delta.arguments
    assert sorted(arguments) == list(range(len(message.tool_calls)))
    for index, call in enumerate(message.tool_calls):
        assert json.loads(arguments[index] or "{}") == call.arguments


async def _compare(
    adapter: ChatAdapter, queue: Any, reply: Any, request: ChatRequest, minted_ids: bool
) -> ChatResponse:
    queue(reply)
    whole, _ = await run(adapter, request, "whole")
    queue(reply)
    streamed, deltas = await run(adapter, request, "stream")

    expected, got = _fields(whole, minted_ids), _fields(streamed, minted_ids)
    for name, value in expected.items():
        assert got[name] == value, f"{name} differs: whole {value!r}, streamed {got[name]!r}"
    _assert_deltas_add_up(deltas, streamed)
    return whole


@pytest.mark.parametrize("name", REPLIES)
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_whole_and_streamed_agree(
    all_targets: dict[str, Target], provider: str, name: str
) -> None:
    target = all_targets[provider]
    asked = REPLIES[name]
    reply = _for(provider, asked)

    whole = await _compare(
        target.adapter(), target.queue, reply, ASK, minted_ids=provider in MINTS_IDS
    )

    # And what they agree on is the reply.
    assert whole.message.content == (reply.text or None)
    assert [(c.name, c.arguments) for c in whole.message.tool_calls] == [
        (DOTTED if c.name == wire_tool_name(DOTTED) else c.name, c.arguments)
        for c in reply.tool_calls
    ]
    if provider != "ollama":
        assert [c.id for c in whole.message.tool_calls] == [c.id for c in reply.tool_calls]
    assert [t.text for t in whole.message.thinking] == (
        [reply.reasoning] if reply.reasoning else []
    )
    expected_reason = "tool_calls" if reply.tool_calls else "stop"
    assert whole.finish_reason == ("length" if asked.finish_reason == "length" else expected_reason)
    stopped_by = "##" if reply.finish_reason == "stop_sequence" else None
    assert whole.stop_sequence == stopped_by
    assert (whole.usage.prompt_tokens, whole.usage.completion_tokens) == (
        reply.prompt_tokens,
        reply.completion_tokens,
    )


async def test_anthropic_thinking_blocks_agree_with_their_signatures(
    all_targets: dict[str, Target],
) -> None:
    target = all_targets["anthropic"]
    fake: Any = target.fake
    fake.thinking = [
        FakeThinking("First, the city.", "sig-1"),
        FakeThinking("opaque", redacted=True),
    ]
    try:
        reply = FakeReply(text="Sunny.", tool_calls=[_call("get_weather", {"city": "Nice"})])
        whole = await _compare(target.adapter(), target.queue, reply, ASK, minted_ids=False)
    finally:
        fake.thinking = []
        fake.issued.clear()

    # Each block is marked with the model that signed it: only that model takes it back.
    model = whole.message.thinking[0].model
    assert model is not None
    assert whole.message.thinking == (
        Thinking("First, the city.", signature="sig-1", model=model),
        Thinking("opaque", redacted=True, model=model),
    )


HERMES = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
RAW_TEXT_REPLIES: dict[str, FakeReply] = {
    "plain answer": FakeReply(text="It is sunny in Oslo."),
    "a call": FakeReply(text=HERMES),
    "prose around calls": FakeReply(text=f"Let me check.\n{HERMES}\n{HERMES}\nDone."),
    "reasoning in the text": FakeReply(text=f"<think>Oslo, then.</think>\n{HERMES}"),
    "reasoning split off by the server": FakeReply(text=HERMES, reasoning="Oslo, then."),
    "a broken call is kept as text": FakeReply(text='<tool_call>{"name": "get_weather", "argu'),
    "an undeclared tool is text": FakeReply(
        text='<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>'
    ),
    "cut at the token limit": FakeReply(text="Partial answ", finish_reason="length"),
}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def raw_text() -> AsyncIterator[tuple[FakeOpenAI, TextToolsAdapter]]:
    fake = FakeOpenAI()
    with serve(fake.app()) as url:
        config = ModelConfig(name="qwen", provider="openai", base_url=f"{url}/v1")
        inner = OpenAIAdapter(config, "sk-upstream")
        yield fake, TextToolsAdapter(inner, FORMATS["hermes"])
        await inner.aclose()


@pytest.mark.parametrize("name", RAW_TEXT_REPLIES)
async def test_raw_text_models_agree_whole_and_streamed(
    raw_text: tuple[FakeOpenAI, TextToolsAdapter], name: str
) -> None:
    fake, adapter = raw_text

    def queue(reply: FakeReply) -> None:
        fake.replies.clear()
        fake.queue(reply)

    await _compare(adapter, queue, RAW_TEXT_REPLIES[name], ASK, minted_ids=True)
