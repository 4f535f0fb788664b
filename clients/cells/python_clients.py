"""Agent frameworks in Python, with their own interpreter (.clients/venv): the OpenAI Agents SDK
and LangChain (``clients/scripts``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from clients.matrix import Cell, Context, expect
from tests.support.fake_openai import FakeReply, FakeToolCall

MODEL = "company-alias"
SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
WEATHER = FakeToolCall("get_weather", {"city": "Oslo"}, "call_weather")


def _script(context: Context, name: str, *args: str) -> str:
    env = {
        "GATEWAY_URL": context.stack.url,
        "GATEWAY_KEY": context.stack.key(name),
        "MODEL": MODEL,
    }
    return context.run([str(context.installed.python), str(SCRIPTS / f"{name}.py"), *args], env)


def _tool_results(requests: list[dict[str, Any]]) -> str:
    return json.dumps(
        [m for request in requests for m in request["messages"] if m.get("role") == "tool"]
    )


def _weather_round(context: Context, name: str, *args: str) -> None:
    """The model calls get_weather; the client runs it and sends the result; the model answers."""
    openai = context.stack.openai
    openai.queue(FakeReply(tool_calls=[WEATHER]), FakeReply(text="It is sunny in Oslo."))
    output = _script(context, name, *args)
    expect("It is sunny in Oslo." in output, output[-2000:])
    expect("sunny in Oslo" in _tool_results(openai.requests), "the tool result never reached it")


def _agents(case: str) -> Any:
    return lambda context: _weather_round(context, "agents_sdk", case)


def agents_mcp(context: Context) -> None:
    openai = context.stack.openai
    lookup = FakeToolCall("lookup", {"word": "agents"}, "call_lookup")
    openai.queue(FakeReply(tool_calls=[lookup]), FakeReply(text="Looked it up."))
    output = _script(context, "agents_sdk", "mcp")
    expect("Looked it up." in output, output[-2000:])
    expect("agents: a thing" in _tool_results(openai.requests), "no tool result upstream")


def _langchain(provider: str) -> Any:
    return lambda context: _weather_round(context, "langchain_models", provider, "tools")


def _langchain_streamed(provider: str) -> Any:
    def check(context: Context) -> None:
        context.stack.openai.queue(FakeReply(text="Streamed through the gateway."))
        output = _script(context, "langchain_models", provider, "streamed")
        expect("Streamed through the gateway." in output, output[-2000:])

    return check


AGENTS = "OpenAI Agents SDK"
CELLS = [
    Cell(AGENTS, "Responses model, function tool", "/v1/responses", _agents("responses")),
    Cell(AGENTS, "Responses model, streamed, function tool", "/v1/responses", _agents("streamed")),
    Cell(AGENTS, "chat model, function tool", "/v1/chat/completions", _agents("chat")),
    Cell(
        AGENTS, "gateway `/mcp` as its MCP server, tool called", "/v1/responses + /mcp", agents_mcp
    ),
    Cell(
        "LangChain",
        "`ChatOpenAI.bind_tools`, tool round",
        "/v1/chat/completions",
        _langchain("openai"),
    ),
    Cell(
        "LangChain", "`ChatOpenAI` streamed", "/v1/chat/completions", _langchain_streamed("openai")
    ),
    Cell(
        "LangChain",
        "`ChatOpenAI(use_responses_api=True).bind_tools`, tool round",
        "/v1/responses",
        _langchain("openai-responses"),
    ),
    Cell(
        "LangChain",
        "`ChatAnthropic.bind_tools`, tool round",
        "/v1/messages",
        _langchain("anthropic"),
    ),
    Cell("LangChain", "`ChatAnthropic` streamed", "/v1/messages", _langchain_streamed("anthropic")),
]
