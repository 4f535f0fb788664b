"""Holds on a budget's counter: simultaneous holds stop exactly at the limit on every store
(this process, Redis, the database on both backends), and a refused hold adds nothing. With an
add-then-undo, refused holds counted against the others for a moment: in the soak, a burst of
thirty $1 requests on a $5 budget served three."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable

import pytest

from accounts.limits.counters import Counters, MemoryCounters
from accounts.limits.database_counters import DatabaseCounters
from accounts.limits.redis_counters import RedisCounters
from db.engine import create_engine, session_factory
from migrations.commands import upgrade
from tests.accounts.limits.test_shared_limits import REDIS_URL, _redis_or_skip

LIMIT = 5.0
BURST = 30


async def _burst(counters: Counters) -> tuple[list[float | None], float]:
    key = f"budget:{uuid.uuid4().hex}"
    held = await asyncio.gather(*(counters.hold(key, 1.0, LIMIT, 60) for _ in range(BURST)))
    return list(held), await counters.get(key)


def _memory() -> Counters:
    return MemoryCounters()


def _redis() -> Counters:
    _redis_or_skip()
    return RedisCounters(REDIS_URL, f"test-{uuid.uuid4().hex[:8]}:")


def _assert_stopped_at_the_limit(held: list[float | None], value: float) -> None:
    assert sorted(h for h in held if h is not None) == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert held.count(None) == BURST - int(LIMIT)
    assert value == LIMIT  # the refused ones added nothing


@pytest.mark.parametrize("store", [_memory, _redis], ids=["memory", "redis"])
def test_simultaneous_holds_stop_exactly_at_the_limit(store: Callable[[], Counters]) -> None:
    async def scenario() -> tuple[list[float | None], float]:
        counters = store()
        try:
            return await _burst(counters)
        finally:
            await counters.aclose()

    _assert_stopped_at_the_limit(*asyncio.run(scenario()))


def test_simultaneous_holds_stop_exactly_at_the_limit_in_the_database(database_url: str) -> None:
    upgrade(database_url)

    async def scenario() -> tuple[list[float | None], float]:
        engine = create_engine(database_url)
        try:
            counters = DatabaseCounters(session_factory(engine), engine.dialect.name)
            return await _burst(counters)
        finally:
            await engine.dispose()

    _assert_stopped_at_the_limit(*asyncio.run(scenario()))
