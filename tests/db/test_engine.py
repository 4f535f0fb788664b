"""The pool's care of its connections: PostgreSQL connections idle for a while are checked
before use (and replaced when the database dropped them), busy ones are not; SQLite
connections come back with nothing left open."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy.util import greenlet_spawn

from db.engine import PoolSettings, create_engine
from db.transactions import Operation, Transactions
from tests.support.databases import postgres_database

_PID = "SELECT pg_backend_pid()"
# What asyncpg may raise on a connection the server has just terminated (which one depends on
# how far the termination got when the statement was sent).
_DROPPED = (asyncpg.PostgresError, asyncpg.InterfaceError, asyncpg.InternalClientError, OSError)


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def postgres_url() -> Iterator[str]:
    with postgres_database() as url:
        yield url


async def _terminate(url: str, pid: int) -> None:
    connection = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        await connection.execute("SELECT pg_terminate_backend($1)", pid)
    finally:
        await connection.close()


@pytest.fixture
async def pool(postgres_url: str) -> AsyncIterator[tuple[Transactions, _Clock]]:
    """One pooled connection, checked before use after a second idle, on a clock we move."""
    clock = _Clock()
    engine = create_engine(postgres_url, PoolSettings(size=1, pre_ping_idle_seconds=1.0), clock)
    try:
        yield Transactions(engine), clock
    finally:
        await engine.dispose()


async def _dropped_backend(transactions: Transactions, postgres_url: str) -> int:
    """The pooled connection's backend, terminated by the database (the pool does not know)."""
    (pid,) = (await transactions.read(_PID))[0]
    await _terminate(postgres_url, pid)
    return int(pid)


async def test_an_idle_connection_the_database_dropped_is_replaced(
    pool: tuple[Transactions, _Clock], postgres_url: str
) -> None:
    transactions, clock = pool
    first = await _dropped_backend(transactions, postgres_url)
    clock.now += 1.5  # idle past the window: checked before use
    (second,) = (await transactions.read(_PID))[0]
    assert second != first


async def test_a_connection_used_moments_ago_is_not_pinged_and_a_dead_one_is_discarded(
    pool: tuple[Transactions, _Clock], postgres_url: str
) -> None:
    transactions, clock = pool
    first = await _dropped_backend(transactions, postgres_url)
    clock.now += 0.5  # within the window: used as it is, and it fails
    with pytest.raises(_DROPPED):
        await transactions.read(_PID)
    # The failed connection went back invalidated: the next use gets a new one.
    (second,) = (await transactions.read(_PID))[0]
    assert second != first


async def test_a_sqlite_connection_returned_mid_transaction_is_rolled_back(
    tmp_path: Path,
) -> None:
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'pool.db'}")
    try:
        transactions = Transactions(engine)
        await _write(transactions, "CREATE TABLE notes (body TEXT)")
        connection = await engine.raw_connection()
        driver = connection.driver_connection
        assert driver is not None
        await driver.execute("BEGIN IMMEDIATE")
        await driver.execute("INSERT INTO notes (body) VALUES ('left open')")
        await greenlet_spawn(connection.close)
        assert list(await transactions.read("SELECT body FROM notes")) == []
        await _write(transactions, "INSERT INTO notes (body) VALUES ('kept')")
        assert [tuple(r) for r in await transactions.read("SELECT body FROM notes")] == [("kept",)]
    finally:
        await engine.dispose()


async def _write(transactions: Transactions, sql: str) -> None:
    def write() -> Operation[None]:
        yield (sql, ())

    await transactions.run(write())
