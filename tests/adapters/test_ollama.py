"""Ollama specifics: the probe, minted call ids, finish reasons."""

from __future__ import annotations

import socket

import pytest

from gateway.providers import ADAPTER_FACTORIES
from llm_service.config import ModelConfig
from llm_service.types import ChatRequest, UserMessage
from tests.adapters.conformance import MODES, Target, run
from tests.support.fake_openai import FakeReply, FakeToolCall

# The adapters (and their SDK clients) are shared: every test runs on the session loop.
pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_probe_is_quiet_when_the_model_is_there(ollama: Target) -> None:
    assert await ollama.adapter().probe() is None


async def test_probe_names_a_model_that_was_never_pulled(ollama: Target) -> None:
    config = ollama.config.model_copy(update={"model": "qwen3"})
    adapter = ADAPTER_FACTORIES["ollama"](config, None)
    try:
        assert await adapter.probe() == "ollama has no model `qwen3` (ollama pull qwen3)"
    finally:
        await adapter.aclose()


async def test_probe_reports_a_server_that_does_not_answer() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = ModelConfig(name="l", provider="ollama", base_url=f"http://127.0.0.1:{port}")
    adapter = ADAPTER_FACTORIES["ollama"](config, None)
    try:
        reason = await adapter.probe()
    finally:
        await adapter.aclose()

    assert reason is not None
    assert "does not answer" in reason


@pytest.mark.parametrize("mode", MODES)
async def test_calls_get_minted_ids_and_finish_as_tool_calls(ollama: Target, mode: str) -> None:
    # Ollama says done_reason "stop" and sends no ids.
    ollama.queue(
        FakeReply(
            tool_calls=[FakeToolCall("a", {"x": 1}), FakeToolCall("b", {})], finish_reason="stop"
        )
    )

    response, _ = await run(ollama.adapter(), ChatRequest((UserMessage("go"),)), mode)

    calls = response.message.tool_calls
    assert [(c.name, c.arguments) for c in calls] == [("a", {"x": 1}), ("b", {})]
    assert all(c.id.startswith("call_") for c in calls)
    assert calls[0].id != calls[1].id
    assert response.finish_reason == "tool_calls"


@pytest.mark.parametrize("mode", MODES)
async def test_length_stays_length_even_with_calls(ollama: Target, mode: str) -> None:
    ollama.queue(FakeReply(tool_calls=[FakeToolCall("a", {})], finish_reason="length"))

    response, _ = await run(ollama.adapter(), ChatRequest((UserMessage("go"),)), mode)

    assert response.finish_reason == "length"
