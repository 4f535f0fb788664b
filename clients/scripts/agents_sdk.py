"""The OpenAI Agents SDK against the gateway: an agent with a function tool on the Responses and
the chat-completions model, streamed, and the gateway's /mcp as an MCP server."""

from __future__ import annotations

import asyncio
import os
import sys

from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    function_tool,
)
from agents.mcp import MCPServerStreamableHttp
from openai import AsyncOpenAI

URL, KEY, MODEL = os.environ["GATEWAY_URL"], os.environ["GATEWAY_KEY"], os.environ["MODEL"]
# No traces to OpenAI's servers: the gateway is the only endpoint.
CONFIG = RunConfig(tracing_disabled=True)


@function_tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"sunny in {city}"


def model(case: str) -> OpenAIResponsesModel | OpenAIChatCompletionsModel:
    client = AsyncOpenAI(base_url=f"{URL}/v1", api_key=KEY, max_retries=0)
    if case == "chat":
        return OpenAIChatCompletionsModel(model=MODEL, openai_client=client)
    return OpenAIResponsesModel(model=MODEL, openai_client=client)


async def main(case: str) -> None:
    if case == "mcp":
        params = {"url": f"{URL}/mcp", "headers": {"Authorization": f"Bearer {KEY}"}}
        async with MCPServerStreamableHttp(params=params, cache_tools_list=True) as server:
            agent = Agent(name="desk", model=model(case), mcp_servers=[server])
            result = await Runner.run(agent, "Look the marker up", run_config=CONFIG)
        print(result.final_output)
        return
    agent = Agent(name="weather", model=model(case), tools=[get_weather])
    if case == "streamed":
        streamed = Runner.run_streamed(agent, "Weather in Oslo?", run_config=CONFIG)
        async for _ in streamed.stream_events():
            pass
        print(streamed.final_output)
        return
    result = await Runner.run(agent, "Weather in Oslo?", run_config=CONFIG)
    print(result.final_output)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
