"""The drain in-process: what has not started its response by the deadline gets a 503."""

from __future__ import annotations

import asyncio

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from gateway.shutdown import Drain, DrainMiddleware


def _held_app(entered: asyncio.Event) -> Starlette:
    async def held(request: Request) -> PlainTextResponse:
        entered.set()
        await asyncio.Event().wait()  # never answers: only the drain ends it
        return PlainTextResponse("unreachable")

    async def healthz(request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    return Starlette(routes=[Route("/held", held), Route("/healthz", healthz)])


async def test_a_request_without_a_response_gets_503_when_the_drain_expires() -> None:
    entered = asyncio.Event()
    drain = Drain(drain_seconds=0.1)
    app = DrainMiddleware(_held_app(entered), drain)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        held = asyncio.create_task(client.get("/held"))
        await asyncio.wait_for(entered.wait(), 5)
        assert drain.in_flight == 1

        await asyncio.wait_for(drain.run(), 10)
        response = await asyncio.wait_for(held, 5)
        refused = await client.get("/other")
        health = await client.get("/healthz")

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "shutting_down"
    assert drain.in_flight == 0
    assert refused.status_code == 503
    assert refused.headers["retry-after"] == "1"
    assert health.status_code == 200


async def test_an_idle_process_drains_at_once() -> None:
    drain = Drain(drain_seconds=60)
    await asyncio.wait_for(drain.run(), 5)  # would time out if it waited the drain time
    assert drain.draining
    assert not drain.expired
