"""The usage recorder: stopping it while a flush waits on the database loses no entry and writes
none twice; a value too long for its column cannot stop accounting; a database refusing
connections loses no entry either."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator

import asyncpg
import pytest
from sqlalchemy import select

from accounts.pricing import PriceBook
from accounts.usage import UsageEntry, UsageRecorder
from db.engine import create_engine, session_factory
from db.transactions import Transactions
from db.usage_models import UsageRecord
from migrations.commands import upgrade
from tests.support.databases import postgres_database


def _entry(number: int) -> UsageEntry:
    return UsageEntry(f"r{number}", 1, "k", "/v1/chat/completions", "m", "p", 1, 2, 3, 200, None)


async def test_stopping_during_a_flush_keeps_every_entry_once(sqlite_url: str) -> None:
    await asyncio.to_thread(upgrade, sqlite_url)
    path = sqlite_url.removeprefix("sqlite+aiosqlite:///")
    blocker = sqlite3.connect(path, check_same_thread=False)
    blocker.execute("BEGIN IMMEDIATE")  # the flush waits for this write lock
    engine = create_engine(sqlite_url)
    recorder = UsageRecorder(Transactions(engine), flush_seconds=60, prices=PriceBook({}), batch=2)
    try:
        await recorder.start()
        recorder.record(_entry(1))
        recorder.record(_entry(2))  # a full batch wakes the periodic flush
        # The recorder has no event for a flush starting; sleep(0) only lets it run.
        while not recorder._lock.locked():  # noqa: ASYNC110 - the flush has taken the entries
            await asyncio.sleep(0)
        recorder.record(_entry(3))
        stopping = asyncio.create_task(recorder.aclose())
        await asyncio.sleep(0)
        assert not stopping.done()
        await asyncio.to_thread(blocker.commit)
        async with asyncio.timeout(30):
            await stopping
        async with session_factory(engine)() as session:
            ids = list(await session.scalars(select(UsageRecord.request_id)))
    finally:
        blocker.close()
        await engine.dispose()

    assert sorted(ids) == ["r1", "r2", "r3"]


async def test_a_value_longer_than_its_column_is_cut_and_stops_no_other_entry(
    database_url: str,
) -> None:
    await asyncio.to_thread(upgrade, database_url)
    engine = create_engine(database_url)
    recorder = UsageRecorder(Transactions(engine), flush_seconds=60, prices=PriceBook({}))
    long_tool = "tool:" + "t" * 200  # what /mcp records for a call of a 200-character name
    try:
        long = UsageEntry("r1", 1, "k" * 300, "/mcp", long_tool, "mcp", 0, 0, 3, 200, None)
        recorder.record(long)
        recorder.record(_entry(2))
        await recorder.flush()
        async with session_factory(engine)() as session:
            rows = (await session.execute(select(UsageRecord.request_id, UsageRecord.model))).all()
    finally:
        await engine.dispose()

    assert sorted(rows) == [("r1", long_tool[:200]), ("r2", "m")]


async def _allow_connections(url: str, allowed: bool) -> None:
    base, _, name = url.replace("postgresql+asyncpg://", "postgresql://").rpartition("/")
    connection = await asyncpg.connect(f"{base}/postgres")
    try:
        await connection.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS {allowed}')
    finally:
        await connection.close()


@pytest.fixture
def postgres_url() -> Iterator[str]:
    with postgres_database() as url:
        yield url


async def test_a_database_refusing_connections_keeps_the_entries_for_the_next_flush(
    postgres_url: str,
) -> None:
    # PostgreSQL starting up or shutting down answers a new connection with a FATAL error (its
    # refusal, unlike a refused TCP connection); the recorder's loop died on it and every usage
    # row after it was lost (found by the soak's PostgreSQL restart).
    url = postgres_url
    await asyncio.to_thread(upgrade, url)
    engine = create_engine(url)
    recorder = UsageRecorder(Transactions(engine), flush_seconds=60, prices=PriceBook({}))
    try:
        await _allow_connections(url, False)
        recorder.record(_entry(1))
        await recorder.flush()  # refused: kept, not raised
        await _allow_connections(url, True)
        recorder.record(_entry(2))
        await recorder.flush()
        async with session_factory(engine)() as session:
            ids = list(await session.scalars(select(UsageRecord.request_id)))
    finally:
        await _allow_connections(url, True)
        await engine.dispose()

    assert sorted(ids) == ["r1", "r2"]
