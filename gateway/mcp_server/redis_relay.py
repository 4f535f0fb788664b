"""``notifications/cancelled`` across replicas, over Redis pub/sub.

Its own module so that a gateway without ``redis_url`` never imports the Redis client. A
cancellation is published as ``[key_id, request_id]`` on one channel every replica listens to;
each stops the call if it runs it (``InFlight.cancel``). Redis unreachable: the cancellation is
logged and dropped, and the call still stops when its client goes away.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

import redis.asyncio as redis
import structlog

from gateway.mcp_server.cancellation import InFlight

log = structlog.get_logger("gateway.mcp_server")
RECONNECT_SECONDS = 1.0
SUBSCRIBE_SECONDS = 5.0


class RedisCancelRelay:
    def __init__(self, url: str, prefix: str, in_flight: InFlight) -> None:
        self._redis = redis.Redis.from_url(url, socket_connect_timeout=2)
        self._channel = f"{prefix}mcp:cancelled"
        self._in_flight = in_flight

    async def publish(self, key_id: int, request_id: object) -> None:
        try:
            await self._redis.publish(self._channel, json.dumps([key_id, str(request_id)]))
        except (redis.RedisError, OSError) as exc:
            log.warning("mcp_cancel_not_relayed", error=type(exc).__name__)

    @asynccontextmanager
    async def listening(self) -> AsyncIterator[None]:
        subscribed = asyncio.Event()
        listener = asyncio.create_task(self._listen(subscribed))
        # Serving starts once the replica hears the others (or Redis proved unreachable once).
        with suppress(TimeoutError):
            await asyncio.wait_for(subscribed.wait(), SUBSCRIBE_SECONDS)
        try:
            yield
        finally:
            listener.cancel()
            with suppress(asyncio.CancelledError):
                await listener
            await self._redis.aclose()

    async def _listen(self, subscribed: asyncio.Event) -> None:
        while True:
            try:
                async with self._redis.pubsub() as pubsub:
                    await pubsub.subscribe(self._channel)
                    subscribed.set()
                    async for message in pubsub.listen():
                        if message["type"] == "message":
                            key_id, request_id = json.loads(message["data"])
                            self._in_flight.cancel(int(key_id), request_id)
            except (redis.RedisError, OSError) as exc:
                log.warning("mcp_cancel_relay_down", error=type(exc).__name__)
                subscribed.set()
                await asyncio.sleep(RECONNECT_SECONDS)
