"""Fixed-window counters in Redis, so every replica shares them.

Its own module so that a gateway without ``redis_url`` never imports the Redis client.
"""

from __future__ import annotations

import redis.asyncio as redis

from accounts.limits.counters import CountersUnavailable


class RedisCounters:
    """Shared by every replica pointing at the same Redis and ``prefix``."""

    def __init__(self, url: str, prefix: str) -> None:
        self._redis = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        self._prefix = prefix

    async def add(self, key: str, amount: float, ttl_seconds: int) -> float:
        name = self._prefix + key
        try:
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.incrbyfloat(name, amount)
                pipe.expire(name, ttl_seconds, nx=True)
                value, _ = await pipe.execute()
        except (redis.RedisError, OSError) as exc:
            raise CountersUnavailable(f"redis: {type(exc).__name__}") from exc
        return float(value)

    async def get(self, key: str) -> float:
        try:
            value = await self._redis.get(self._prefix + key)
        except (redis.RedisError, OSError) as exc:
            raise CountersUnavailable(f"redis: {type(exc).__name__}") from exc
        return float(value) if value is not None else 0.0

    async def aclose(self) -> None:
        await self._redis.aclose()
