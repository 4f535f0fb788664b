"""When to try an upstream call again, and how long to wait first."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from llm_service.config import Retry
from llm_service.errors import GatewayError, UpstreamError

Clock = Callable[[], float]
Sleeper = Callable[[float], Awaitable[None]]


@dataclass
class Timing:
    """The clock and the sleeper the router uses; tests inject fakes so waits cost nothing."""

    clock: Clock = time.monotonic
    sleep: Sleeper = asyncio.sleep
    random: random.Random = field(default_factory=random.Random)


def is_retryable(error: GatewayError) -> bool:
    return isinstance(error, UpstreamError) and error.retryable


def backoff_seconds(attempt: int, policy: Retry, error: GatewayError, rng: random.Random) -> float:
    """Jittered exponential wait after failed ``attempt`` (1-based); a longer Retry-After wins.

    The jitter ("equal jitter": half fixed, half random) spreads the retries of many callers that
    failed together, so a recovering provider is not hit by one synchronized wave.
    """
    ceiling = min(policy.backoff_max, policy.backoff_base * 2 ** (attempt - 1))
    delay: float = ceiling / 2 + rng.uniform(0, ceiling / 2)
    retry_after = error.retry_after if isinstance(error, UpstreamError) else None
    if retry_after is not None:
        delay = max(delay, float(retry_after))
    return delay
