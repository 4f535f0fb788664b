"""One budget gate on every route that spends: 30 simultaneous requests against a $3 budget on
models priced $1 a request reach the provider at most three times (plus one reserved request),
and requests refused before the provider cost nothing in usage."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.accounts.limits.test_shared_limits import REDIS_URL, _redis_or_skip
from tests.support.databases import postgres_database
from tests.support.fake_openai import FakeOpenAI, FakeReply
from tests.support.gateway import RunningGateway, running_gateway
from tests.support.servers import serve
from tests.support.waiting import eventually

BUDGET = 3.0
BURST = 30
# At most the budget's worth of requests, plus the one reservation the gate allows over it.
MOST = int(BUDGET) + 1
PER_REQUEST = {"per_request": 1.0}
KEY_LIMITS = {"roles": {"spender": {"budget_per_day": BUDGET}}}
# The upstream holds each answer a moment: every request of the burst is in flight at once.
SLOW = FakeReply(text="ok", first_byte_delay=0.2)


def priced_models(openai_url: str) -> list[dict[str, object]]:
    upstream = {
        "provider": "openai",
        "base_url": f"{openai_url}/v1",
        "api_key_env": "UPSTREAM_KEY",
        "price": PER_REQUEST,
    }
    return [
        {**upstream, "name": "gpt", "model": "gpt-upstream"},
        {**upstream, "name": "gpt-native", "model": "gpt-upstream", "responses_api": "native"},
        {**upstream, "name": "embed", "kind": "embedding", "model": "text-embedding-3-small"},
    ]


@dataclass
class Stack:
    gateway: RunningGateway
    upstream: FakeOpenAI
    database: Path


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    upstream = FakeOpenAI()
    database = Path(tmp_path_factory.mktemp("db")) / "gateway.db"
    with (
        serve(upstream.app()) as openai_url,
        running_gateway(
            f"sqlite+aiosqlite:///{database}",
            environ={"UPSTREAM_KEY": "sk-upstream"},
            models=priced_models(openai_url),
            key_limits=KEY_LIMITS,
            usage_flush_seconds=0.05,
        ) as gateway,
    ):
        yield Stack(gateway, upstream, database)


async def _burst(base: str | list[str], key: str, path: str, body: dict[str, Any]) -> list[int]:
    bases = [base] if isinstance(base, str) else base
    headers = {"authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_connections=BURST)) as http:
        answers = await asyncio.gather(
            *(
                http.post(f"{bases[n % len(bases)]}{path}", json=body, headers=headers)
                for n in range(BURST)
            )
        )
    return [answer.status_code for answer in answers]


def _reached_upstream(stack: Stack, key_name: str, path: str, body: dict[str, Any]) -> int:
    key = stack.gateway.create_key(key_name, ["spender"])
    stack.upstream.queue(*[SLOW] * BURST)
    before = len(stack.upstream.requests)
    try:
        statuses = asyncio.run(_burst(stack.gateway.v1, key, path, body))
    finally:
        stack.upstream.replies.clear()
    assert set(statuses) <= {200, 429}, statuses
    reached = len(stack.upstream.requests) - before
    assert statuses.count(200) == reached
    return reached


HELLO = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/chat/completions", {"model": "gpt", "messages": HELLO}),
        ("/chat/completions", {"model": "gpt", "messages": HELLO, "stream": True}),
        ("/messages", {"model": "gpt", "max_tokens": 16, "messages": HELLO}),
        ("/responses", {"model": "gpt", "input": "hi"}),
        ("/responses", {"model": "gpt", "input": "hi", "stream": True}),
        ("/responses", {"model": "gpt-native", "input": "hi"}),
        ("/responses", {"model": "gpt-native", "input": "hi", "stream": True}),
        ("/embeddings", {"model": "embed", "input": "hi"}),
    ],
    ids=[
        "chat",
        "chat-stream",
        "messages",
        "responses-translated",
        "responses-translated-stream",
        "responses-native",
        "responses-native-stream",
        "embeddings",
    ],
)
def test_simultaneous_requests_stop_at_the_budget(
    stack: Stack, path: str, body: dict[str, Any], request: pytest.FixtureRequest
) -> None:
    reached = _reached_upstream(stack, request.node.callspec.id, path, body)

    assert int(BUDGET) <= reached <= MOST


def test_simultaneous_conversation_turns_stop_at_the_budget(stack: Stack) -> None:
    gateway = stack.gateway
    key = gateway.create_key("turns", ["spender"])
    headers = {"authorization": f"Bearer {key}"}
    conversations = [
        httpx.post(f"{gateway.v1}/conversations", json={"model": "gpt"}, headers=headers).json()
        for _ in range(BURST)
    ]
    stack.upstream.queue(*[SLOW] * BURST)
    before = len(stack.upstream.requests)

    async def turns() -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=30) as http:
            return await asyncio.gather(
                *(
                    http.post(
                        f"{gateway.v1}/conversations/{c['id']}/messages",
                        json={"content": "hi"},
                        headers=headers,
                    )
                    for c in conversations
                )
            )

    try:
        asyncio.run(turns())
    finally:
        stack.upstream.replies.clear()

    assert 1 <= len(stack.upstream.requests) - before <= MOST


def _usage_rows(database: Path, key_name: str) -> list[tuple[int, float | None]]:
    with sqlite3.connect(database) as db:
        return db.execute(
            "SELECT u.status_code, u.cost_usd FROM usage_records u"
            " JOIN api_keys k ON k.id = u.api_key_id WHERE k.name = ?",
            (key_name,),
        ).fetchall()


def test_refused_requests_cost_nothing_in_usage_and_reports(stack: Stack) -> None:
    gateway = stack.gateway
    key = gateway.create_key("refused", ["spender"])
    admin = gateway.create_key("ops", ["admin"])
    chat = {"model": "gpt", "messages": HELLO}
    headers = {"authorization": f"Bearer {key}"}
    statuses = [
        httpx.post(f"{gateway.v1}/chat/completions", json=chat, headers=headers).status_code
        for _ in range(6)
    ]
    assert statuses == [200, 200, 200, 429, 429, 429]
    unknown = {"model": "no-such-model", "messages": HELLO}
    missing = httpx.post(f"{gateway.v1}/chat/completions", json=unknown, headers=headers)
    assert missing.status_code == 404
    eventually(lambda: len(_usage_rows(stack.database, "refused")) == 7, "usage recorded")

    rows = _usage_rows(stack.database, "refused")
    assert sorted(rows) == [(200, 1.0)] * 3 + [(404, 0.0)] + [(429, 0.0)] * 3
    report = httpx.get(
        f"{gateway.v1}/admin/usage",
        params={"by": "key"},
        headers={"authorization": f"Bearer {admin}"},
    ).json()["data"]
    (mine,) = [row for row in report if row["key_name"] == "refused"]
    assert (mine["requests"], mine["errors"], mine["cost_usd"]) == (7, 4, 3.0)
    assert mine["unpriced_requests"] == 0


@pytest.fixture(scope="module", params=["redis", "database"])
def two_replicas(
    request: pytest.FixtureRequest,
) -> Iterator[tuple[list[RunningGateway], FakeOpenAI]]:
    """Two gateways on one PostgreSQL database, sharing their budget counters through Redis,
    or without Redis through the database."""
    upstream = FakeOpenAI()
    shared: dict[str, Any] = {"environ": {"UPSTREAM_KEY": "sk-upstream"}, "key_limits": KEY_LIMITS}
    if request.param == "redis":
        _redis_or_skip()
        shared |= {"redis_url": REDIS_URL, "redis_key_prefix": f"test-{uuid.uuid4().hex}:"}
    with (
        postgres_database() as database_url,
        serve(upstream.app()) as openai_url,
    ):
        shared["models"] = priced_models(openai_url)
        with (
            running_gateway(database_url, **shared) as one,
            running_gateway(database_url, **shared) as two,
        ):
            yield [one, two], upstream


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/chat/completions", {"model": "gpt", "messages": HELLO, "stream": True}),
        ("/responses", {"model": "gpt-native", "input": "hi"}),
        ("/embeddings", {"model": "embed", "input": "hi"}),
    ],
    ids=["chat-stream", "responses", "embeddings"],
)
def test_two_replicas_share_one_gate(
    two_replicas: tuple[list[RunningGateway], FakeOpenAI],
    path: str,
    body: dict[str, Any],
    request: pytest.FixtureRequest,
) -> None:
    gateways, upstream = two_replicas
    key = gateways[0].create_key(f"two-{request.node.callspec.id}", ["spender"])
    upstream.queue(*[SLOW] * BURST)
    before = len(upstream.requests)
    try:
        statuses = asyncio.run(_burst([g.v1 for g in gateways], key, path, body))
    finally:
        upstream.replies.clear()

    reached = len(upstream.requests) - before
    assert statuses.count(200) == reached
    assert int(BUDGET) <= reached <= MOST
