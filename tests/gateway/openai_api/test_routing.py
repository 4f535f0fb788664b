"""Fallbacks, served-by headers and broken streams, end to end through the gateway."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.support.fake_openai import FakeOpenAI, FakeReply
from tests.support.gateway import RunningGateway, running_gateway
from tests.support.servers import serve

FAST_RETRY = {"backoff_base": 0.01, "backoff_max": 0.05}
FAST_TIMEOUTS = {"read": 1.0, "first_byte": 1.0, "between_chunks": 0.3}
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
TOOL_HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "Weather in Oslo?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "-3C, snow"},
]


@dataclass
class Pair:
    gateway: RunningGateway
    primary: FakeOpenAI
    secondary: FakeOpenAI
    key: str

    def client(self) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.gateway.v1, api_key=self.key, max_retries=0)

    def reset(self) -> None:
        for fake in (self.primary, self.secondary):
            fake.replies.clear()
            fake.requests.clear()
            fake.outage = None


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    primary, secondary = FakeOpenAI(), FakeOpenAI()
    database = f"sqlite+aiosqlite:///{Path(tmp_path_factory.mktemp('db')) / 'gateway.db'}"
    common = {"provider": "openai", "retry": FAST_RETRY, "timeouts": FAST_TIMEOUTS}
    with (
        serve(primary.app()) as primary_url,
        serve(secondary.app()) as secondary_url,
        running_gateway(
            database,
            models=[
                {
                    "name": "main",
                    "base_url": f"{primary_url}/v1",
                    "fallbacks": ["other"],
                    "context_window_fallbacks": ["roomy"],
                    "circuit_breaker": {"failure_threshold": 1000},
                    **common,
                },
                {"name": "other", "base_url": f"{secondary_url}/v1", **common},
                {"name": "roomy", "provider": "mock"},
            ],
        ) as gateway,
    ):
        yield Pair(gateway, primary, secondary, gateway.create_key("team", ["user"]))


@pytest.fixture
def fresh(pair: Pair) -> Pair:
    pair.reset()
    return pair


def test_fallback_keeps_tools_and_tool_history_and_says_who_answered(fresh: Pair) -> None:
    fresh.primary.outage = FakeReply(status=500)
    fresh.secondary.queue(FakeReply(text="Snowy in Oslo."))

    raw = fresh.client().chat.completions.with_raw_response.create(
        model="main",
        messages=TOOL_HISTORY,  # type: ignore[arg-type]
        tools=[WEATHER_TOOL],  # type: ignore[list-item]
    )

    assert raw.parse().choices[0].message.content == "Snowy in Oslo."
    assert raw.parse().model == "main"
    assert raw.headers["x-gateway-model"] == "other"
    assert raw.headers["x-gateway-provider"] == "openai"
    assert len(fresh.primary.requests) == 3
    sent = fresh.secondary.requests[0]
    assert sent["tools"][0]["function"]["name"] == "get_weather"
    assert sent["messages"][1]["tool_calls"][0]["id"] == "call_1"
    assert sent["messages"][2] == {"role": "tool", "tool_call_id": "call_1", "content": "-3C, snow"}


def test_the_primary_answers_when_healthy(fresh: Pair) -> None:
    raw = fresh.client().chat.completions.with_raw_response.create(
        model="main", messages=[{"role": "user", "content": "Hi"}]
    )

    assert raw.headers["x-gateway-model"] == "main"
    assert fresh.secondary.requests == []


def test_a_too_long_prompt_goes_to_the_context_window_fallback(fresh: Pair) -> None:
    fresh.primary.queue(
        FakeReply(
            status=400,
            error={"message": "too long", "type": "invalid", "code": "context_length_exceeded"},
        )
    )

    raw = fresh.client().chat.completions.with_raw_response.create(
        model="main", messages=[{"role": "user", "content": "a very long prompt"}]
    )

    assert raw.headers["x-gateway-model"] == "roomy"
    assert raw.parse().choices[0].message.content == "Echo: a very long prompt"
    assert fresh.secondary.requests == []


def test_a_caller_error_is_neither_retried_nor_sent_to_a_fallback(fresh: Pair) -> None:
    fresh.primary.queue(FakeReply(status=400, error={"message": "bad", "type": "invalid"}))

    with pytest.raises(openai.BadRequestError):
        fresh.client().chat.completions.create(
            model="main", messages=[{"role": "user", "content": "Hi"}]
        )

    assert len(fresh.primary.requests) == 1
    assert fresh.secondary.requests == []


def _sse_events(pair: Pair) -> list[dict[str, Any]]:
    body = {"model": "main", "messages": [{"role": "user", "content": "Hi"}], "stream": True}
    headers = {"authorization": f"Bearer {pair.key}"}
    with httpx.Client(timeout=10) as http:
        response = http.post(f"{pair.gateway.v1}/chat/completions", json=body, headers=headers)
    assert response.status_code == 200
    lines = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    return [json.loads(line) for line in lines if line != "[DONE]"]


@pytest.mark.parametrize(
    "reply",
    [
        FakeReply(text="this stream is cut", truncate_after=3),
        FakeReply(text="this stream goes quiet", stall_after=3),
        FakeReply(text="this stream fails", stream_error={"message": "x"}, error_after=3),
    ],
    ids=["truncated", "stalled", "error-event"],
)
def test_a_stream_broken_mid_way_ends_with_an_error_event(fresh: Pair, reply: FakeReply) -> None:
    fresh.primary.queue(reply)

    events = _sse_events(fresh)

    assert events[1]["choices"][0]["delta"]["content"] == "this"
    assert "error" in events[-1]
    assert events[-1]["error"]["type"] in {"upstream_error", "timeout"}
    assert fresh.secondary.requests == []  # bytes were sent: no fallback after that


def test_a_stream_failing_before_its_first_event_falls_back(fresh: Pair) -> None:
    fresh.primary.outage = FakeReply(status=503)
    fresh.secondary.queue(FakeReply(text="from the other one"))

    events = _sse_events(fresh)

    text = "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e["choices"])
    assert text == "from the other one"
