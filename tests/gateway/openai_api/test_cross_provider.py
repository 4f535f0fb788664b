"""One conversation moves OpenAI -> Anthropic -> Ollama -> OpenAI through /v1/chat/completions.

Each hop sends the whole history, tool calls and results included, to a fake that refuses what
the real API refuses (Anthropic: ids outside [A-Za-z0-9_-], results that do not answer the last
assistant turn; Ollama: string arguments, tool messages without a tool name).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import openai
import pytest

from tests.support.databases import fresh_database
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_ollama import FakeOllama
from tests.support.fake_openai import FakeOpenAI, FakeReply, FakeToolCall
from tests.support.gateway import RunningGateway, running_gateway
from tests.support.servers import serve

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["C", "F"], "default": "C"},
            },
            "required": ["city"],
        },
    },
}
# Legal for OpenAI, refused by Anthropic; and an Anthropic id too long for OpenAI.
OPENAI_STYLE_ID = "call|paris.1"
LONG_ANTHROPIC_ID = "toolu_" + "o" * 44


@dataclass
class Fakes:
    gateway: RunningGateway
    key: str
    openai: FakeOpenAI
    anthropic: FakeAnthropic
    ollama: FakeOllama


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture(scope="module")
def fakes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fakes]:
    fake_openai, fake_anthropic, fake_ollama = FakeOpenAI(), FakeAnthropic(), FakeOllama()
    with (
        serve(fake_openai.app()) as openai_url,
        serve(fake_anthropic.app()) as anthropic_url,
        serve(fake_ollama.app()) as ollama_url,
        fresh_database("sqlite", tmp_path_factory.mktemp("db")) as database_url,
        running_gateway(
            database_url,
            environ={"UPSTREAM_KEY": "sk-upstream"},
            models=[
                {
                    "name": "gpt",
                    "provider": "openai",
                    "base_url": f"{openai_url}/v1",
                    "api_key_env": "UPSTREAM_KEY",
                },
                {
                    "name": "claude",
                    "provider": "anthropic",
                    "base_url": anthropic_url,
                    "api_key_env": "UPSTREAM_KEY",
                },
                {
                    "name": "llama",
                    "provider": "ollama",
                    "model": "llama3.2",
                    "base_url": ollama_url,
                },
                {
                    "name": "llama-offline",
                    "provider": "ollama",
                    "base_url": f"http://127.0.0.1:{_closed_port()}",
                },
            ],
        ) as gateway,
    ):
        key = gateway.create_key("team", ["user"])
        yield Fakes(gateway, key, fake_openai, fake_anthropic, fake_ollama)


def _client(fakes: Fakes) -> openai.OpenAI:
    return openai.OpenAI(base_url=fakes.gateway.v1, api_key=fakes.key, max_retries=0)


def _assistant(message: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": message.content,
        "tool_calls": [c.model_dump() for c in message.tool_calls or ()],
    }


def test_conversation_moves_across_providers_with_tool_history(fakes: Fakes) -> None:
    client = _client(fakes)
    history: list[Any] = [{"role": "user", "content": "Weather in Paris, then Oslo?"}]

    # 1. OpenAI calls a tool, with an id Anthropic would refuse.
    fakes.openai.queue(
        FakeReply(tool_calls=[FakeToolCall("get_weather", {"city": "Paris"}, OPENAI_STYLE_ID)])
    )
    first = client.chat.completions.create(model="gpt", messages=history, tools=[WEATHER_TOOL])
    assert first.choices[0].finish_reason == "tool_calls"
    assert first.choices[0].message.tool_calls[0].id == OPENAI_STYLE_ID
    assert "default" not in json.dumps(fakes.openai.requests[-1]["tools"])
    history += [
        _assistant(first.choices[0].message),
        {"role": "tool", "tool_call_id": OPENAI_STYLE_ID, "content": "18C"},
    ]

    # 2. Anthropic (streamed) reads that history and calls again, with a 50-character id.
    fakes.anthropic.queue(
        FakeReply(tool_calls=[FakeToolCall("get_weather", {"city": "Oslo"}, LONG_ANTHROPIC_ID)])
    )
    chunks = list(
        client.chat.completions.create(
            model="claude", messages=history, tools=[WEATHER_TOOL], stream=True
        )
    )
    sent = fakes.anthropic.requests[-1]
    tool_use = sent["messages"][1]["content"][0]
    result = sent["messages"][2]["content"][0]
    assert tool_use["type"] == "tool_use"
    assert tool_use["id"] == result["tool_use_id"] != OPENAI_STYLE_ID
    calls = [c for chunk in chunks for d in chunk.choices for c in d.delta.tool_calls or ()]
    assert calls[0].id == LONG_ANTHROPIC_ID
    assert json.loads("".join(c.function.arguments or "" for c in calls)) == {"city": "Oslo"}
    history += [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": LONG_ANTHROPIC_ID,
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": LONG_ANTHROPIC_ID, "content": "3C"},
    ]

    # 3. Ollama answers from the whole history.
    fakes.ollama.queue(FakeReply(text="Paris 18C, Oslo 3C."))
    third = client.chat.completions.create(model="llama", messages=history, tools=[WEATHER_TOOL])
    assert third.choices[0].message.content == "Paris 18C, Oslo 3C."
    tool_messages = [m for m in fakes.ollama.requests[-1]["messages"] if m["role"] == "tool"]
    assert [(m["tool_name"], m["content"]) for m in tool_messages] == [
        ("get_weather", "18C"),
        ("get_weather", "3C"),
    ]
    history += [{"role": "assistant", "content": third.choices[0].message.content}]

    # 4. Back on OpenAI: every id fits its 40-character limit and still pairs with its result.
    history += [{"role": "user", "content": "Thanks"}]
    fakes.openai.queue(FakeReply(text="You're welcome."))
    client.chat.completions.create(model="gpt", messages=history)
    wire = fakes.openai.requests[-1]["messages"]
    call_ids = [c["id"] for m in wire for c in m.get("tool_calls") or ()]
    result_ids = [m["tool_call_id"] for m in wire if m["role"] == "tool"]
    assert call_ids == result_ids
    assert call_ids[0] == OPENAI_STYLE_ID
    assert all(len(i) <= 40 for i in call_ids)


def test_unreachable_ollama_shows_unavailable_and_answers_503(fakes: Fakes) -> None:
    operator = {"authorization": f"Bearer {fakes.gateway.create_key('ops', ['admin'])}"}
    ready = httpx.get(f"{fakes.gateway.url}/readyz", headers=operator).json()

    assert ready["models"]["llama"]["available"] is True
    offline = ready["models"]["llama-offline"]
    assert offline["available"] is False
    assert "does not answer" in offline["reason"]
    with pytest.raises(openai.APIStatusError) as caught:
        _client(fakes).chat.completions.create(
            model="llama-offline", messages=[{"role": "user", "content": "Hi"}]
        )
    assert caught.value.status_code == 503


@pytest.mark.parametrize(
    ("status", "error_type", "expected_status", "expected_code"),
    [
        (429, "rate_limit_error", 429, "upstream_rate_limited"),
        (529, "overloaded_error", 503, "upstream_overloaded"),
        (401, "authentication_error", 502, "upstream_auth_failed"),
    ],
)
def test_anthropic_failures_reach_callers_as_clear_errors(
    fakes: Fakes, status: int, error_type: str, expected_status: int, expected_code: str
) -> None:
    error = {"type": error_type, "message": "fake"}
    fakes.anthropic.queue(FakeReply(status=status, error=error, headers={"retry-after": "7"}))

    reply = httpx.post(
        f"{fakes.gateway.v1}/chat/completions",
        headers={"Authorization": f"Bearer {fakes.key}"},
        json={"model": "claude", "messages": [{"role": "user", "content": "Hi"}]},
    )

    assert reply.status_code == expected_status
    assert reply.json()["error"]["code"] == expected_code
    if status == 429:
        assert reply.headers["retry-after"] == "7"
