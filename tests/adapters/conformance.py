"""The fakes and adapters the conformance and error matrices run against (one set per module)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from gateway.providers import ADAPTER_FACTORIES
from llm_service.config import ModelConfig
from llm_service.types import ChatAdapter, ChatRequest, ChatResponse, StreamDone, StreamEvent
from tests.support.fake_anthropic import FakeAnthropic, Fault
from tests.support.fake_ollama import FakeOllama
from tests.support.fake_openai import FakeOpenAI, FakeReply
from tests.support.servers import serve

PROVIDERS = ("openai", "anthropic", "ollama", "litellm")
MODES = ("whole", "stream")


class Fake(Protocol):
    requests: list[dict[str, Any]]

    def queue(self, *replies: Any) -> None: ...


@dataclass
class Target:
    provider: str
    fake: Fake
    config: ModelConfig
    _adapter: ChatAdapter | None = field(default=None, repr=False)

    def adapter(self) -> ChatAdapter:
        """One adapter per target, reused: SDK clients are costly to build."""
        if self._adapter is None:
            self._adapter = ADAPTER_FACTORIES[self.config.provider](self.config, "sk-upstream")
        return self._adapter

    async def aclose(self) -> None:
        if self._adapter is not None:
            await self._adapter.aclose()
            self._adapter = None

    def queue(self, *replies: FakeReply | Fault) -> None:
        self.fake.replies.clear()  # type: ignore[attr-defined]
        self.fake.queue(*replies)
        self.fake.requests.clear()

    @property
    def sent(self) -> dict[str, Any]:
        return self.fake.requests[-1]


@contextmanager
def targets() -> Iterator[dict[str, Target]]:
    """Every provider's fake on its own 127.0.0.1 port; litellm goes to the OpenAI fake."""
    fake_openai, fake_anthropic, fake_ollama = FakeOpenAI(), FakeAnthropic(), FakeOllama()
    with ExitStack() as stack:
        openai_url = stack.enter_context(serve(fake_openai.app()))
        anthropic_url = stack.enter_context(serve(fake_anthropic.app()))
        ollama_url = stack.enter_context(serve(fake_ollama.app()))

        def config(provider: str, model: str, base_url: str) -> ModelConfig:
            return ModelConfig(name=provider, provider=provider, model=model, base_url=base_url)  # type: ignore[arg-type]

        yield {
            "openai": Target("openai", fake_openai, config("openai", "gpt-x", f"{openai_url}/v1")),
            "anthropic": Target(
                "anthropic", fake_anthropic, config("anthropic", "claude-x", anthropic_url)
            ),
            "ollama": Target("ollama", fake_ollama, config("ollama", "llama3.2", ollama_url)),
            "litellm": Target(
                "litellm", fake_openai, config("litellm", "openai/gpt-x", f"{openai_url}/v1")
            ),
        }


async def run(
    adapter: ChatAdapter, request: ChatRequest, mode: str
) -> tuple[ChatResponse, list[StreamEvent]]:
    """The answer, and for streams the deltas before the single final ``StreamDone``."""
    if mode == "whole":
        return await adapter.complete(request), []
    events = [event async for event in adapter.stream(request)]
    done = [e for e in events if isinstance(e, StreamDone)]
    assert len(done) == 1
    assert events[-1] is done[0]
    return done[0].response, events[:-1]
