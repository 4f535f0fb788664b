"""Sign-in attempt limits: per client address and for all clients together, per minute.

Counted in the same counters as the key limits (Redis when configured), so every replica shares
them. If the shared counters do not answer, this replica counts alone rather than lock every
admin out: the limits are a brake on guessing, and keys are 256-bit secrets.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from accounts.limits.counters import Counters, CountersUnavailable, MemoryCounters

MINUTE = 60


@dataclass(frozen=True, slots=True)
class SignInThrottle:
    counters: Counters
    per_client: int
    total: int
    fallback: MemoryCounters
    clock: Callable[[], float] = time.time

    async def admit(self, client: str) -> float | None:
        """Counts an attempt; the seconds to wait when over a limit, else None."""
        now = self.clock()
        window = int(now // MINUTE)
        limits = (
            (f"signin:client:{client}:{window}", self.per_client),
            (f"signin:all:{window}", self.total),
        )
        for key, limit in limits:
            if await self._add(key) > limit:
                return MINUTE - now % MINUTE
        return None

    async def _add(self, key: str) -> float:
        try:
            return await self.counters.add(key, 1, 2 * MINUTE)
        except CountersUnavailable:
            return await self.fallback.add(key, 1, 2 * MINUTE)
