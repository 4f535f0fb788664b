"""Fixed-window counters in this process (``redis_counters`` shares them between replicas)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol


class CountersUnavailable(Exception):
    """The shared store did not answer; limits cannot be checked right now."""


class Counters(Protocol):
    async def add(self, key: str, amount: float, ttl_seconds: int) -> float:
        """Add to the counter (created with ``ttl_seconds`` to live) and return its new value."""
        ...

    async def hold(self, key: str, amount: float, limit: float, ttl_seconds: int) -> float | None:
        """Add ``amount`` only while the counter is below ``limit``, in one atomic step: the new
        value, or None with nothing added. A refused hold adds nothing even for a moment, so it
        can never make another caller's hold look over the limit."""
        ...

    async def get(self, key: str) -> float: ...

    async def aclose(self) -> None: ...


class MemoryCounters:
    """For one process. Expired windows are dropped as new ones are written."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._values: dict[str, tuple[float, float]] = {}  # key -> (expires at, value)

    async def add(self, key: str, amount: float, ttl_seconds: int) -> float:
        now = self._clock()
        expires, value = self._values.get(key, (now + ttl_seconds, 0.0))
        if expires <= now:
            expires, value = now + ttl_seconds, 0.0
        self._values[key] = (expires, value + amount)
        if len(self._values) > 10_000:
            self._values = {k: v for k, v in self._values.items() if v[0] > now}
        return value + amount

    async def hold(self, key: str, amount: float, limit: float, ttl_seconds: int) -> float | None:
        if await self.get(key) >= limit:
            return None
        return await self.add(key, amount, ttl_seconds)

    async def get(self, key: str) -> float:
        expires, value = self._values.get(key, (0.0, 0.0))
        return value if expires > self._clock() else 0.0

    async def aclose(self) -> None:
        self._values.clear()
