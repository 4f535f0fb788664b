"""A fake clock and registries of real adapters for the router tests."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from gateway.providers import ADAPTER_FACTORIES
from llm_service.config import ModelConfig
from llm_service.registry import ModelRegistry
from llm_service.retry import Timing
from llm_service.router import Router
from llm_service.types import ChatRequest, UserMessage

HELLO = ChatRequest(messages=(UserMessage("Hello"),))


@dataclass
class FakeTime:
    """Time that moves only when the router sleeps or the test says so."""

    now: float = 1_000.0
    sleeps: list[float] = field(default_factory=list)

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def timing(self) -> Timing:
        return Timing(self.clock, self.sleep, random.Random(7))


def openai_model(name: str, base_url: str, **values: Any) -> dict[str, Any]:
    return {"name": name, "provider": "openai", "base_url": base_url, **values}


@asynccontextmanager
async def router_for(time: FakeTime, *models: dict[str, Any]) -> AsyncIterator[Router]:
    configs = [ModelConfig.model_validate(m) for m in models]
    registry = ModelRegistry.build(configs, ADAPTER_FACTORIES, {})
    try:
        yield Router(registry, time.timing())
    finally:
        await registry.aclose()
