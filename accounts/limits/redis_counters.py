"""Fixed-window counters in Redis, so every replica shares them.

Its own module so that a gateway without ``redis_url`` never imports the Redis client.
"""

from __future__ import annotations

import redis.asyncio as redis

from accounts.limits.counters import CountersUnavailable

# KEYS[1] the counter; ARGV amount, limit, ttl. A script runs atomically in Redis.
_HOLD = """
local value = tonumber(redis.call('GET', KEYS[1]) or '0')
if value >= tonumber(ARGV[2]) then return false end
local after = redis.call('INCRBYFLOAT', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[3], 'NX')
return after
"""


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

    async def hold(self, key: str, amount: float, limit: float, ttl_seconds: int) -> float | None:
        name = self._prefix + key
        try:
            value = await self._redis.eval(_HOLD, 1, name, amount, limit, ttl_seconds)
        except (redis.RedisError, OSError) as exc:
            raise CountersUnavailable(f"redis: {type(exc).__name__}") from exc
        return None if value is None else float(value)

    async def get(self, key: str) -> float:
        try:
            value = await self._redis.get(self._prefix + key)
        except (redis.RedisError, OSError) as exc:
            raise CountersUnavailable(f"redis: {type(exc).__name__}") from exc
        return float(value) if value is not None else 0.0

    async def aclose(self) -> None:
        await self._redis.aclose()
