"""The OpenAI adapter's transport: one aiohttp-backed pool, failures told apart by type."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import openai
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from adapters.openai import OpenAIAdapter
from llm_service.config import ModelConfig
from llm_service.errors import (
    UpstreamConnectionError,
    UpstreamQuotaExceeded,
    UpstreamServerError,
    UpstreamTimeout,
)
from llm_service.types import ChatRequest, StreamDone, TextDelta, UserMessage
from tests.support.fake_openai import FakeOpenAI, FakeReply, FakeToolCall
from tests.support.servers import serve

REQUEST = ChatRequest(messages=(UserMessage("ping"),))
USER: Any = {"role": "user", "content": "ping"}


def _adapter(base_url: str, read_timeout: float = 5.0) -> OpenAIAdapter:
    config = ModelConfig.model_validate(
        {
            "name": "gpt",
            "provider": "openai",
            "base_url": base_url,
            "timeouts": {"connect": 2, "read": read_timeout},
        }
    )
    return OpenAIAdapter(config, api_key="sk-test")


@dataclass
class FakeServer:
    fake: FakeOpenAI
    url: str


@pytest.fixture
def fake_server() -> Iterator[FakeServer]:
    fake = FakeOpenAI()
    with serve(fake.app()) as url:
        yield FakeServer(fake, f"{url}/v1")


@pytest.fixture
def fake(fake_server: FakeServer) -> str:
    return fake_server.url


async def test_requests_reuse_one_client_whole_and_streamed(fake: str) -> None:
    adapter = _adapter(fake)
    try:
        first = await adapter.complete(REQUEST)
        second = await adapter.complete(REQUEST)
        events = [event async for event in adapter.stream(REQUEST)]
    finally:
        await adapter.aclose()

    assert first.message.content == second.message.content
    streamed = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert streamed == first.message.content
    assert isinstance(events[-1], StreamDone)


async def test_refused_connection_is_a_connection_error_not_a_timeout() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        adapter = _adapter(f"http://127.0.0.1:{closed.getsockname()[1]}/v1")
        try:
            with pytest.raises(UpstreamConnectionError):
                await adapter.complete(REQUEST)
        finally:
            await adapter.aclose()


async def test_silent_upstream_is_a_timeout() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)  # the kernel accepts; nobody ever answers
        adapter = _adapter(f"http://127.0.0.1:{silent.getsockname()[1]}/v1", read_timeout=0.2)
        try:
            with pytest.raises(UpstreamTimeout):
                await adapter.complete(REQUEST)
        finally:
            await adapter.aclose()


async def test_the_official_sdk_and_the_adapter_read_the_fake_alike() -> None:
    """The fake speaks the wire as the SDK expects it, and the adapter reads what the SDK reads."""
    fake = FakeOpenAI()
    call = FakeToolCall("lookup", {"city": "Oslo"}, id="call_1")
    with serve(fake.app()) as url:
        sdk = openai.AsyncOpenAI(api_key="sk-test", base_url=f"{url}/v1", max_retries=0)
        adapter = _adapter(f"{url}/v1")
        try:
            fake.queue(FakeReply(text="plain words"), FakeReply(text="plain words"))
            by_sdk = await sdk.chat.completions.create(model="gpt", messages=[USER])
            ours = await adapter.complete(REQUEST)
            fake.queue(FakeReply(tool_calls=[call]), FakeReply(tool_calls=[call]))
            chunks = await sdk.chat.completions.create(model="gpt", messages=[USER], stream=True)
            sdk_calls: dict[int, dict[str, str]] = {}
            async for chunk in chunks:
                for choice in chunk.choices:
                    for delta in choice.delta.tool_calls or ():
                        entry = sdk_calls.setdefault(
                            delta.index, dict.fromkeys(("id", "name", "args"), "")
                        )
                        entry["id"] += delta.id or ""
                        if delta.function is not None:
                            entry["name"] += delta.function.name or ""
                            entry["args"] += delta.function.arguments or ""
            events = [event async for event in adapter.stream(REQUEST)]
        finally:
            await adapter.aclose()
            await sdk.close()

    assert ours.message.content == by_sdk.choices[0].message.content == "plain words"
    assert by_sdk.usage is not None
    assert (ours.usage.prompt_tokens, ours.usage.completion_tokens) == (
        by_sdk.usage.prompt_tokens,
        by_sdk.usage.completion_tokens,
    )
    done = events[-1]
    assert isinstance(done, StreamDone)
    [ours_call] = done.response.message.tool_calls
    assert sdk_calls == {0: {"id": "call_1", "name": "lookup", "args": '{"city": "Oslo"}'}}
    assert (ours_call.id, ours_call.name, ours_call.arguments) == (
        "call_1",
        "lookup",
        {"city": "Oslo"},
    )


async def test_the_key_and_body_go_upstream_as_the_sdk_sends_them(fake_server: FakeServer) -> None:
    adapter = _adapter(fake_server.url)
    try:
        await adapter.complete(REQUEST)
    finally:
        await adapter.aclose()

    assert fake_server.fake.headers[-1]["authorization"] == "Bearer sk-test"
    assert fake_server.fake.headers[-1]["content-type"] == "application/json"
    assert fake_server.fake.requests[-1]["messages"] == [USER]


async def test_an_error_event_inside_the_stream_is_a_server_error(fake_server: FakeServer) -> None:
    fake_server.fake.queue(FakeReply(text="a b c", stream_error={"message": "overheated"}))
    adapter = _adapter(fake_server.url)
    try:
        with pytest.raises(UpstreamServerError, match="overheated"):
            [event async for event in adapter.stream(REQUEST)]
    finally:
        await adapter.aclose()


async def test_a_spent_quota_is_not_a_rate_limit(fake_server: FakeServer) -> None:
    error = {"message": "You exceeded your quota", "type": "insufficient_quota"}
    fake_server.fake.queue(FakeReply(status=429, error={**error, "code": "insufficient_quota"}))
    adapter = _adapter(fake_server.url)
    try:
        with pytest.raises(UpstreamQuotaExceeded, match="You exceeded your quota"):
            await adapter.complete(REQUEST)
    finally:
        await adapter.aclose()


async def test_a_stream_closed_early_frees_its_upstream_connection(
    fake_server: FakeServer,
) -> None:
    fake_server.fake.queue(FakeReply(text="one two three four", stall_after=2))
    adapter = _adapter(fake_server.url)
    try:
        events = adapter.stream(REQUEST)
        assert isinstance(await anext(events), TextDelta)
        await events.aclose()  # what the gateway does when its caller goes away

        # Waited on in a thread: the socket closes on this loop's next turns.
        assert await asyncio.to_thread(fake_server.fake.client_left.wait, 10)
    finally:
        await adapter.aclose()


async def test_an_error_body_sent_in_pieces_is_read_whole() -> None:
    """The error's code decides quota against rate limit, so the whole body must be read."""
    body = b'{"error": {"message": "You exceeded your quota", "code": "insufficient_quota"}}'

    async def chat(request: Request) -> Response:
        async def pieces() -> AsyncIterator[bytes]:
            yield body[:20]
            await asyncio.sleep(0.2)  # a slow network: the reader sees the first piece alone
            yield body[20:]

        return StreamingResponse(pieces(), 429, media_type="application/json")

    app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
    with serve(app) as url:
        adapter = _adapter(f"{url}/v1")
        try:
            with pytest.raises(UpstreamQuotaExceeded, match="You exceeded your quota"):
                await adapter.complete(REQUEST)
        finally:
            await adapter.aclose()
