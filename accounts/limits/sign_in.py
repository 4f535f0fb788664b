"""Sign-in attempt limits, per minute: per client address, and per key prefix.

No limit is shared by every client: with one, anybody could lock every admin out by making
attempts from many addresses (through a trusted proxy, or from many hosts). The client's
bucket brakes one address guessing; the key prefix's bucket (the key's first characters, which
lists show: ``accounts.keys.key_prefix``) brakes guessing the rest of one known key from many
addresses, and locks out at most that key's own sign-in, never another admin's.

Counted in the same counters as the key limits (Redis when configured), so every replica shares
them. If the shared counters do not answer, this replica counts alone rather than lock every
admin out: the limits are a brake on guessing, and keys are 256-bit secrets.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass

from accounts.limits.counters import Counters, CountersUnavailable, MemoryCounters

MINUTE = 60
# The longest IPv6 address with a zone is well under this; anything longer is hashed so a
# counter's name stays short whatever a forwarded header held.
_LONGEST_CLIENT = 64


@dataclass(frozen=True, slots=True)
class SignInThrottle:
    counters: Counters
    per_client: int
    per_key: int
    fallback: MemoryCounters
    clock: Callable[[], float] = time.time

    async def admit(self, client: str, key_prefix: str) -> float | None:
        """Counts an attempt with a key starting ``key_prefix`` from ``client``; the seconds to
        wait when over a limit, else None. Over the client's limit, the key's is not counted:
        one address cannot use up another admin's attempts faster than its own allow."""
        now = self.clock()
        window = int(now // MINUTE)
        limits = (
            (f"signin:client:{_bounded(client)}:{window}", self.per_client),
            (f"signin:key:{_bounded(key_prefix)}:{window}", self.per_key),
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


def _bounded(text: str) -> str:
    if len(text) <= _LONGEST_CLIENT and text.isprintable():
        return text
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
