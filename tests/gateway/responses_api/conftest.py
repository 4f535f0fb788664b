from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import openai
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_openai import FakeOpenAI
from tests.support.gateway import RunningGateway, running_gateway
from tests.support.mcp_servers import demo_server
from tests.support.servers import serve

WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather for a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": True,
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
class ResponsesStack:
    """A gateway in front of a fake OpenAI and a fake Anthropic, called through the openai SDK."""

    gateway: RunningGateway
    openai_fake: FakeOpenAI
    anthropic_fake: FakeAnthropic
    plain_fake: FakeOpenAI  # as an OpenAI model that does not reason
    user_key: str
    other_key: str

    def client(self, key: str | None = None) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.gateway.v1, api_key=key or self.user_key, max_retries=0)

    def fresh(self) -> None:
        for fake in (self.openai_fake, self.anthropic_fake, self.plain_fake):
            fake.replies.clear()
            fake.requests.clear()
            fake.headers.clear()
        self.openai_fake.paths.clear()
        self.plain_fake.paths.clear()


# The route's database work is the foundation's (tested on both backends); SQLite keeps it fast.
@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ResponsesStack]:
    openai_fake, anthropic_fake = FakeOpenAI(), FakeAnthropic()
    plain_fake = FakeOpenAI(refuses_encrypted_reasoning=True)
    database_url = f"sqlite+aiosqlite:///{Path(tmp_path_factory.mktemp('db')) / 'gateway.db'}"
    demo = demo_server("docs")
    with (
        serve(demo.server.streamable_http_app()) as docs_url,
        serve(openai_fake.app()) as openai_url,
        serve(plain_fake.app()) as plain_url,
        serve(anthropic_fake.app()) as anthropic_url,
        serve(_cut_stream_openai()) as cut_url,
        running_gateway(
            database_url,
            environ={"UPSTREAM_KEY": "sk-upstream"},
            max_messages=5,  # every test's conversation fits; test_too_many_messages does not
            mcp_servers=[
                {
                    "name": "docs",
                    "transport": "streamable_http",
                    "url": f"{docs_url}/mcp",
                    "roles": ["user"],
                    "trusted": True,
                    "tools": {"fail": {"roles": ["admin"]}},
                }
            ],
            tool_catalog={"discovery_timeout": 5},
            responses_builtin_tools={"web_search": "echo", "code_interpreter": "fail"},
            models=[
                {
                    # OpenAI's own Responses API, passed through (the fake serves /v1/responses)
                    "name": "gpt-native",
                    "provider": "openai",
                    "model": "gpt-upstream",
                    "base_url": f"{openai_url}/v1",
                    "api_key_env": "UPSTREAM_KEY",
                    "responses_api": "native",
                },
                {
                    "name": "gpt-plain",
                    "provider": "openai",
                    "base_url": f"{plain_url}/v1",
                    "api_key_env": "UPSTREAM_KEY",
                    "responses_api": "native",
                },
                {
                    # Its first deployment is down: the router falls back, still passing through.
                    "name": "gpt-native-behind-a-dead-one",
                    "provider": "openai",
                    "base_url": "http://127.0.0.1:9/v1",
                    "api_key_env": "UPSTREAM_KEY",
                    "responses_api": "native",
                    "retry": {"max_attempts": 1},
                    "fallbacks": ["gpt-native"],
                },
                {
                    # A fallback that cannot pass through: the whole alias is translated.
                    "name": "gpt-native-or-claude",
                    "provider": "openai",
                    "model": "gpt-upstream",
                    "base_url": f"{openai_url}/v1",
                    "api_key_env": "UPSTREAM_KEY",
                    "responses_api": "native",
                    "fallbacks": ["claude"],
                },
                {
                    "name": "gpt",
                    "provider": "openai",
                    "model": "gpt-upstream",
                    "base_url": f"{openai_url}/v1",
                    "api_key_env": "UPSTREAM_KEY",
                },
                {
                    "name": "claude",
                    "provider": "anthropic",
                    "model": "claude-upstream",
                    "base_url": anthropic_url,
                    "api_key_env": "UPSTREAM_KEY",
                },
                {
                    "name": "gpt-cut",
                    "provider": "openai",
                    "base_url": f"{cut_url}/v1",
                    "api_key_env": "UPSTREAM_KEY",
                },
                {"name": "mock", "provider": "mock"},
                {"name": "analyst-only", "provider": "mock", "roles": ["analyst"]},
            ],
        ) as gateway,
    ):
        yield ResponsesStack(
            gateway,
            openai_fake,
            anthropic_fake,
            plain_fake,
            user_key=gateway.create_key("team-a", ["user"]),
            other_key=gateway.create_key("team-b", ["user"]),
        )


@pytest.fixture
def fresh(stack: ResponsesStack) -> ResponsesStack:
    stack.fresh()
    return stack
