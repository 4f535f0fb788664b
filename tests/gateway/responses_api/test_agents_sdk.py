"""The OpenAI Agents SDK runs an agent with a function tool against the gateway to completion:
its Responses model, pointed at the gateway, over an OpenAI model (translated, and passed through
to OpenAI's own Responses API with reasoning items) and an Anthropic model."""

from __future__ import annotations

import asyncio

import pytest
from agents import Agent, OpenAIResponsesModel, RunConfig, Runner, function_tool
from openai import AsyncOpenAI

from tests.gateway.responses_api.conftest import ResponsesStack
from tests.support.fake_openai import FakeReply, FakeToolCall

# No traces leave the machine (the SDK would export them to OpenAI).
NO_TRACING = RunConfig(tracing_disabled=True)


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def _agent(stack: ResponsesStack, model: str) -> tuple[Agent, AsyncOpenAI]:
    client = AsyncOpenAI(base_url=stack.gateway.v1, api_key=stack.user_key, max_retries=0)
    agent = Agent(
        name="weather",
        instructions="Answer with the weather.",
        tools=[get_weather],
        model=OpenAIResponsesModel(model=model, openai_client=client),
    )
    return agent, client


def _script(stack: ResponsesStack, model: str) -> None:
    fake = stack.anthropic_fake if model == "claude" else stack.openai_fake
    # Only OpenAI's own Responses API has reasoning items (Chat Completions has no place for them).
    reasoning = "Look it up." if model == "gpt-native" else None
    fake.queue(
        FakeReply(
            reasoning=reasoning,
            tool_calls=[FakeToolCall("get_weather", {"city": "Oslo"}, id="call_9")],
        ),
        FakeReply(text="It is sunny in Oslo."),
    )


def _sent_history(stack: ResponsesStack, model: str) -> str:
    if model == "gpt-native":
        return str(stack.openai_fake.requests[1]["input"])
    fake = stack.anthropic_fake if model == "claude" else stack.openai_fake
    return str(fake.requests[1]["messages"])


@pytest.mark.parametrize("model", ["gpt", "gpt-native", "claude"])
def test_an_agent_completes_a_tool_turn(fresh: ResponsesStack, model: str) -> None:
    _script(fresh, model)
    agent, client = _agent(fresh, model)

    async def run() -> str:
        try:
            result = await Runner.run(agent, "Weather in Oslo?", run_config=NO_TRACING)
            return str(result.final_output)
        finally:
            await client.close()

    assert asyncio.run(run()) == "It is sunny in Oslo."
    fake = fresh.anthropic_fake if model == "claude" else fresh.openai_fake
    assert len(fake.requests) == 2
    # The tool ran on the agent's side and its result went back to the model.
    assert "sunny in Oslo" in _sent_history(fresh, model)
    if model == "gpt-native":  # with the reasoning item it came with (the fake checks the pair)
        assert "reasoning" in [item.get("type") for item in fake.requests[1]["input"]]


@pytest.mark.parametrize("model", ["gpt", "gpt-native"])
def test_a_streamed_agent_run_completes_a_tool_turn(fresh: ResponsesStack, model: str) -> None:
    _script(fresh, model)
    agent, client = _agent(fresh, model)

    async def run() -> tuple[str, list[str]]:
        try:
            result = Runner.run_streamed(agent, "Weather in Oslo?", run_config=NO_TRACING)
            kinds = [event.type async for event in result.stream_events()]
            return str(result.final_output), kinds
        finally:
            await client.close()

    output, kinds = asyncio.run(run())
    assert output == "It is sunny in Oslo."
    assert "raw_response_event" in kinds
    assert "sunny in Oslo" in _sent_history(fresh, model)
