"""The OpenAI adapter's transport: one aiohttp-backed pool, failures told apart by type."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from adapters.openai import OpenAIAdapter
from llm_service.config import ModelConfig
from llm_service.errors import UpstreamConnectionError, UpstreamTimeout
from llm_service.types import ChatRequest, StreamDone, TextDelta, UserMessage
from tests.support.fake_openai import FakeOpenAI
from tests.support.servers import serve

REQUEST = ChatRequest(messages=(UserMessage("ping"),))


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


@pytest.fixture
def fake() -> Iterator[str]:
    with serve(FakeOpenAI().app()) as url:
        yield f"{url}/v1"


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
