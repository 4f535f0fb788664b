from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import anthropic
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from tests.support.fake_openai import FakeOpenAI
from tests.support.gateway import RunningGateway, running_gateway
from tests.support.servers import serve

UPSTREAM_KEY = "sk-upstream-secret-for-anthropic-tests"
WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Weather for a city",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}


def _cut_stream_openai() -> Starlette:
    """An OpenAI-compatible server whose stream fails after its first words, as OpenAI reports it:
    an ``error`` object in a ``data:`` line."""

    async def chat(request: Request) -> Response:
        chunk = {
            "id": "chatcmpl-cut",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "cut",
            "choices": [{"index": 0, "delta": {"content": "Hel"}, "finish_reason": None}],
        }
        error = {"error": {"message": "the model crashed", "type": "server_error"}}

        async def body() -> AsyncIterator[str]:
            yield f"data: {json.dumps(chunk)}\n\n"
            yield f"data: {json.dumps(error)}\n\n"

        return StreamingResponse(body(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


@dataclass
class AnthropicStack:
    """A gateway in front of a fake OpenAI and mock models, called through the Anthropic SDK."""

    gateway: RunningGateway
    fake: FakeOpenAI
    user_key: str

    def client(self, key: str | None = None) -> anthropic.Anthropic:
        return anthropic.Anthropic(
            base_url=self.gateway.url, api_key=key or self.user_key, max_retries=0
        )


# The route's database work is the foundation's (tested on both backends); SQLite keeps it fast.
@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AnthropicStack]:
    fake = FakeOpenAI()
    database_url = f"sqlite+aiosqlite:///{Path(tmp_path_factory.mktemp('db')) / 'gateway.db'}"
    with (
        serve(fake.app()) as fake_url,
        serve(_cut_stream_openai()) as cut_url,
        running_gateway(
            database_url,
            environ={"FAKE_OPENAI_KEY": UPSTREAM_KEY},
            models=[
                {
                    "name": "gpt",
                    "provider": "openai",
                    "model": "gpt-upstream",
                    "base_url": f"{fake_url}/v1",
                    "api_key_env": "FAKE_OPENAI_KEY",
                },
                {
                    "name": "gpt-cut",
                    "provider": "openai",
                    "base_url": f"{cut_url}/v1",
                    "api_key_env": "FAKE_OPENAI_KEY",
                },
                {"name": "mock", "provider": "mock"},
                {
                    "name": "mock-tools",
                    "provider": "mock",
                    "script": [
                        {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]},
                        {"text": "Oslo: {last_tool_result}"},
                    ],
                },
                {
                    "name": "mock-limited",
                    "provider": "mock",
                    "script": [{"error": {"status": 429, "message": "scripted rate limit"}}],
                },
                {
                    "name": "mock-overloaded",
                    "provider": "mock",
                    "script": [{"error": {"status": 529, "message": "scripted overload"}}],
                },
                {"name": "analyst-only", "provider": "mock", "roles": ["analyst"]},
                {"name": "keyless", "provider": "openai", "api_key_env": "NOT_SET_ANYWHERE"},
            ],
        ) as gateway,
    ):
        yield AnthropicStack(gateway, fake, user_key=gateway.create_key("team-a", ["user"]))


@pytest.fixture
def fresh_fake(stack: AnthropicStack) -> FakeOpenAI:
    stack.fake.replies.clear()
    stack.fake.requests.clear()
    stack.fake.headers.clear()
    return stack.fake
