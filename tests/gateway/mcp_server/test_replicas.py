"""Stateless sessions: any replica serves any request of a client's session."""

from __future__ import annotations

import uuid
from contextlib import ExitStack
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
import redis
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.gateway.mcp_server.conftest import Desk, gateway_settings, record_of, text_of
from tests.support.databases import IN_CI
from tests.support.gateway import create_key, running_gateway


class Balancer:
    """A client-side load balancer: sends each request to the replica ``pick`` names."""

    def __init__(self, urls: list[str]) -> None:
        self.urls = [httpx2.URL(url) for url in urls]
        self.sent: list[int] = []
        self.only: int | None = None

    async def route(self, request: httpx2.Request) -> None:
        index = self.only if self.only is not None else len(self.sent) % len(self.urls)
        self.sent.append(index)
        target = self.urls[index]
        request.url = request.url.copy_with(host=target.host, port=target.port)


async def through(balancer: Balancer, key: str, work: Any) -> Any:
    headers = {"authorization": f"Bearer {key}"}
    hooks = {"request": [balancer.route]}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30, event_hooks=hooks) as http,
        streamable_http_client(f"{balancer.urls[0]}mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await work(session)


def test_a_session_spans_two_replicas_and_outlives_one(
    database_url: str, desk: tuple[Desk, str]
) -> None:
    server, desk_url = desk
    settings = gateway_settings(desk_url)
    with ExitStack() as replicas, ExitStack() as stop_first:
        first = stop_first.enter_context(running_gateway(database_url, **settings))
        second = replicas.enter_context(running_gateway(database_url, **settings))
        key = create_key(database_url, "product-team", ["user"])
        admin_key = create_key(database_url, "reviewer", ["admin"])
        balancer = Balancer([f"{first.url}/", f"{second.url}/"])

        async def work(session: ClientSession) -> list[types.CallToolResult]:
            names = sorted(t.name for t in (await session.list_tools()).tools)
            assert names == ["count", "hang", "lookup", "transfer", "wipe"]
            looked_up = await session.call_tool("lookup", {"word": "replica"})
            # The call waits on the first replica; the reviewer decides on the second.
            balancer.only = 0
            waiting = anyio.Event()

            async def progress(progress: float, total: float | None, message: str | None) -> None:
                waiting.set()

            outcome: list[types.CallToolResult] = []

            async def transfer() -> None:
                outcome.append(
                    await session.call_tool("transfer", {"amount": 3}, progress_callback=progress)
                )

            async with anyio.create_task_group() as group:
                group.start_soon(transfer)
                await waiting.wait()
                headers = {"authorization": f"Bearer {admin_key}"}
                async with httpx2.AsyncClient(base_url=second.url, headers=headers) as admin:
                    [held] = (await admin.get("/v1/admin/approvals")).json()["data"]
                    decided = await admin.post(f"/v1/admin/approvals/{held['record_id']}/approve")
                    assert decided.status_code == 200, decided.text
            return [looked_up, *outcome]

        looked_up, transferred = anyio.run(through, balancer, key, work)

        assert text_of(looked_up) == "replica: a thing"
        assert text_of(transferred) == "transferred 3"
        assert record_of(transferred)["state"] == "succeeded"
        assert server.transfers == [3]
        assert set(balancer.sent) == {0, 1}

        async def after_restart(session: ClientSession) -> types.CallToolResult:
            await session.list_tools()  # on the first replica
            stop_first.close()  # it goes away; the same session carries on at the second
            balancer.only = 1
            return await session.call_tool("lookup", {"word": "failover"})

        balancer.only = 0
        survived = anyio.run(through, balancer, key, after_restart)
        assert text_of(survived) == "failover: a thing"


REDIS_URL = "redis://127.0.0.1:6379/0"


def _redis_or_skip() -> None:
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
    except redis.RedisError:
        if IN_CI:
            raise
        pytest.skip("Redis is not running on 127.0.0.1:6379")


def test_a_cancellation_reaching_another_replica_stops_the_call(
    database_url: str, desk: tuple[Desk, str]
) -> None:
    """The call runs on the first replica; the client's ``notifications/cancelled`` (a request
    of its own, stateless) lands on the second, which relays it through Redis."""
    _redis_or_skip()
    server, desk_url = desk
    # Its own channel: other gateways on this Redis hear nothing of it.
    settings = {
        **gateway_settings(desk_url),
        "redis_url": REDIS_URL,
        "redis_key_prefix": f"test-{uuid.uuid4().hex}:",
    }
    with (
        running_gateway(database_url, **settings) as first,
        running_gateway(database_url, **settings) as second,
    ):
        key = create_key(database_url, "product-team", ["user"])
        headers = {
            "authorization": f"Bearer {key}",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2025-11-25",
        }
        call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "hang"}}
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}

        async def run() -> tuple[int, bytes]:
            async with (
                httpx2.AsyncClient(headers=headers, timeout=30) as http,
                http.stream("POST", f"{first.url}/mcp", json=call) as running,
            ):
                started = await anyio.to_thread.run_sync(server.hang_started.wait, 20)
                assert started, "the call never reached the tool server"
                relayed = await http.post(f"{second.url}/mcp", json=cancel)
                # The call's own request is still open: only the relay can have stopped it.
                stopped = await anyio.to_thread.run_sync(server.hang_cancelled.wait, 20)
                assert stopped, "the tool server was never told to stop"
                return relayed.status_code, await running.aread()

        status, answer = anyio.run(run)

    assert status == 202
    assert b"cancelled the call" in answer
