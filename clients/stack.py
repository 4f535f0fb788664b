"""The gateway the matrix runs against, on 127.0.0.1.

Upstream are the project's wire-faithful provider fakes (tests/support), scripted per cell;
behind ``/mcp`` a real MCP tool server (the desk of tests/gateway/mcp_server: ``lookup`` runs at
once, ``transfer`` waits for a reviewer, ``count`` reports progress). A recorder keeps each
request a client sent and the gateway's answer, for a failed cell's report.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from migrations.commands import upgrade
from server.app import create_app
from tests.gateway.mcp_server.conftest import Desk, desk_server, gateway_settings
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_openai import FakeOpenAI
from tests.support.gateway import create_key, settings_for
from tests.support.servers import serve

KEPT_BYTES = 4000  # of each request and answer body, in a failed cell's report
PRICE = {"input_per_1k": 0.003, "output_per_1k": 0.015}


@dataclass(frozen=True)
class Exchange:
    method: str
    path: str
    request: bytes
    status: int
    answer: bytes

    def shown(self) -> str:
        request = self.request[:KEPT_BYTES].decode(errors="replace")
        answer = self.answer[:KEPT_BYTES].decode(errors="replace")
        return f"{self.method} {self.path}\n{request}\n-> {self.status}\n{answer}"


@dataclass
class Recorder:
    """ASGI middleware: every exchange with the gateway, bodies cut at ``KEPT_BYTES``."""

    app: ASGIApp
    exchanges: list[Exchange] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request, answer, status = bytearray(), bytearray(), [0]

        async def received() -> Message:
            message = await receive()
            if message["type"] == "http.request" and len(request) < KEPT_BYTES:
                request.extend(message.get("body", b""))
            return message

        async def sent(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            elif message["type"] == "http.response.body" and len(answer) < KEPT_BYTES:
                answer.extend(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, received, sent)
        finally:
            query = scope.get("query_string", b"").decode()
            path = scope["path"] + (f"?{query}" if query else "")
            self.exchanges.append(
                Exchange(scope["method"], path, bytes(request), status[0], bytes(answer))
            )


@dataclass
class Stack:
    url: str
    database_url: str
    admin_key: str
    openai: FakeOpenAI
    anthropic: FakeAnthropic
    desk: Desk
    recorder: Recorder
    keys: dict[str, str] = field(default_factory=dict)

    def key(self, name: str) -> str:
        """The API key of ``name`` (one per client, so usage shows each under its own key)."""
        if name not in self.keys:
            self.keys[name] = create_key(self.database_url, name, ["user"])
        return self.keys[name]

    @property
    def v1(self) -> str:
        return f"{self.url}/v1"

    @property
    def mcp_url(self) -> str:
        return f"{self.url}/mcp"

    def fresh(self) -> None:
        for fake in (self.openai, self.anthropic):
            fake.replies.clear()
            fake.requests.clear()
            fake.headers.clear()
        self.recorder.exchanges.clear()

    def admin(self, path: str, method: str = "GET") -> Any:
        headers = {"authorization": f"Bearer {self.admin_key}"}
        answer = httpx.request(method, self.url + path, headers=headers, timeout=30)
        answer.raise_for_status()
        return answer.json()


def _models(openai_url: str, anthropic_url: str) -> list[dict[str, Any]]:
    openai = {"provider": "openai", "api_key_env": "UPSTREAM_KEY", "price": PRICE}
    return [
        # A company alias served by an OpenAI-compatible model: every API is translated.
        {
            "name": "company-alias",
            "model": "gpt-upstream",
            "base_url": f"{openai_url}/v1",
            **openai,
        },
        # OpenAI's own Responses API, passed through.
        {
            "name": "gpt-native",
            "model": "gpt-upstream",
            "base_url": f"{openai_url}/v1",
            "responses_api": "native",
            **openai,
        },
        {
            "name": "claude-alias",
            "provider": "anthropic",
            "model": "claude-upstream",
            "base_url": anthropic_url,
            "api_key_env": "UPSTREAM_KEY",
            "price": PRICE,
        },
    ]


@contextmanager
def running(folder: Path) -> Iterator[Stack]:
    openai, anthropic, desk = FakeOpenAI(), FakeAnthropic(), desk_server()
    database_url = f"sqlite+aiosqlite:///{folder / 'gateway.db'}"
    with (
        serve(desk.server.streamable_http_app()) as desk_url,
        serve(openai.app()) as openai_url,
        serve(anthropic.app()) as anthropic_url,
    ):
        settings = settings_for(
            database_url,
            models=_models(openai_url, anthropic_url),
            usage_flush_seconds=0.2,
            log_level="warning",
            **gateway_settings(desk_url),
        )
        upgrade(database_url)
        recorder = Recorder(create_app(settings, {"UPSTREAM_KEY": "sk-upstream"}))
        with serve(recorder) as url:
            yield Stack(
                url,
                database_url,
                admin_key=create_key(database_url, "matrix-admin", ["admin"]),
                openai=openai,
                anthropic=anthropic,
                desk=desk,
                recorder=recorder,
            )
