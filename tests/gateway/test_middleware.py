"""The request context middleware: every response carries a request id, the caller's own when it
sends a well-formed one."""

from __future__ import annotations

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from gateway.middleware import RequestContextMiddleware


async def _hello(request: Request) -> Response:
    return PlainTextResponse(request.scope["state"]["context"].request_id)


def _client() -> httpx.AsyncClient:
    app = Starlette(routes=[Route("/", _hello)])
    app.add_middleware(RequestContextMiddleware)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gateway")


async def test_each_request_gets_its_own_id_of_32_hex_digits() -> None:
    async with _client() as client:
        responses = [await client.get("/") for _ in range(200)]

    ids = [response.headers["x-request-id"] for response in responses]
    assert len(set(ids)) == len(ids)
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids)
    assert [response.text for response in responses] == ids  # the same id the handler saw


async def test_a_well_formed_caller_id_is_kept_and_a_malformed_one_replaced() -> None:
    async with _client() as client:
        kept = await client.get("/", headers={"x-request-id": "trace-42:a.b"})
        replaced = await client.get("/", headers={"x-request-id": "no spaces\tor tabs"})

    assert kept.headers["x-request-id"] == "trace-42:a.b"
    assert len(replaced.headers["x-request-id"]) == 32
