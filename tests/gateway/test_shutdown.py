"""SIGTERM on a real ``llm-gateway serve`` process: readiness fails, new work is refused,
in-flight streams get the drain time, what outlives it ends with an error event, usage is kept.

Every wait is on an event (a log line, a chunk, the process exit), bounded by a timeout.
"""

from __future__ import annotations

import asyncio
import json
import signal
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import yaml
from sqlalchemy import select
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from db.engine import create_engine, session_factory
from db.usage_models import UsageRecord
from migrations.commands import upgrade
from tests.support.gateway import create_key
from tests.support.processes import gateway_process
from tests.support.servers import serve

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 30.0


@dataclass
class HeldStreams:
    """A fake OpenAI whose stream for user message X stops mid-way until ``release[X]`` is set."""

    started: dict[str, threading.Event] = field(default_factory=dict)
    release: dict[str, threading.Event] = field(default_factory=dict)

    def hold(self, name: str) -> None:
        self.started[name] = threading.Event()
        self.release[name] = threading.Event()

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"])])

    async def _chat(self, request: Request) -> StreamingResponse:
        body = await request.json()
        name = body["messages"][-1]["content"]
        return StreamingResponse(self._chunks(body["model"], name), media_type="text/event-stream")

    async def _chunks(self, model: str, name: str) -> AsyncIterator[str]:
        def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
            choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
            payload = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": model}
            return f"data: {json.dumps({**payload, 'choices': [choice]})}\n\n"

        yield chunk({"role": "assistant", "content": ""})
        yield chunk({"content": f"held {name}"})
        self.started[name].set()
        await anyio.to_thread.run_sync(self.release[name].wait, TIMEOUT)
        yield chunk({"content": " released"})
        yield chunk({}, "stop")
        yield "data: [DONE]\n\n"


def _read_until(lines: Iterator[str], needle: str) -> list[str]:
    seen = []
    for line in lines:
        seen.append(line)
        if needle in line:
            return seen
    raise AssertionError(f"the stream ended without {needle!r}: {seen}")


def _usage(database_url: str) -> list[UsageRecord]:
    async def read() -> list[UsageRecord]:
        engine = create_engine(database_url)
        try:
            async with session_factory(engine)() as session:
                return list(await session.scalars(select(UsageRecord).order_by(UsageRecord.id)))
        finally:
            await engine.dispose()

    return asyncio.run(read())


def test_sigterm_drains_then_cuts_off_streams(tmp_path: Path) -> None:
    upstream = HeldStreams()
    upstream.hold("finishes")
    upstream.hold("outlives")
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}"
    upgrade(database_url)
    key = create_key(database_url, "drain-test", ["user"])
    config = tmp_path / "gateway.yaml"

    with ExitStack() as stack:
        upstream_url = stack.enter_context(serve(upstream.app()))
        model = {"name": "gpt", "provider": "openai", "base_url": f"{upstream_url}/v1"}
        settings = {
            "database_url": database_url,
            "shutdown_drain_seconds": 4,
            "models": [{**model, "api_key_env": "UP_KEY"}],
        }
        config.write_text(yaml.safe_dump(settings))
        gateway = stack.enter_context(gateway_process(config))
        client = stack.enter_context(
            httpx.Client(
                base_url=gateway.url,
                headers={"authorization": f"Bearer {key}"},
                timeout=TIMEOUT,
            )
        )

        def open_stream(name: str) -> Iterator[str]:
            body = {"model": "gpt", "stream": True, "messages": [{"role": "user", "content": name}]}
            response = stack.enter_context(client.stream("POST", "/v1/chat/completions", json=body))
            assert response.status_code == 200
            lines = response.iter_lines()
            _read_until(lines, f"held {name}")
            return lines

        finishes = open_stream("finishes")
        outlives = open_stream("outlives")

        gateway.process.send_signal(signal.SIGTERM)
        gateway.wait_for_line(r'"event": ?"shutdown_draining"')

        ready = client.get("/readyz")
        assert (ready.status_code, ready.json()["status"]) == (503, "draining")
        assert client.get("/healthz").status_code == 200  # liveness stays green
        body = {"model": "gpt", "messages": [{"role": "user", "content": "new"}]}
        refused = client.post("/v1/chat/completions", json=body)
        assert refused.status_code == 503
        assert refused.json()["error"]["code"] == "shutting_down"

        upstream.release["finishes"].set()
        assert _read_until(finishes, "[DONE]")[-1] == "data: [DONE]"

        rest = [line for line in outlives if line.startswith("data: ")]
        assert json.loads(rest[-1].removeprefix("data: "))["error"]["code"] == "shutting_down"
        assert "data: [DONE]" not in rest
        assert gateway.process.wait(TIMEOUT) == 0
        upstream.release["outlives"].set()

    rows = _usage(database_url)
    assert [(r.model, r.status_code, r.error_type) for r in rows] == [
        ("gpt", 200, None),
        ("gpt", 200, "shutting_down"),
    ]
