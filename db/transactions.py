"""Hot transactions, run on the driver's own connection (the conversation turn, tool-call
moves, the key check before each tool call).

Their statements are few and fixed, and SQLAlchemy's per-statement work (compilation cache
lookups, the session and transaction state machines, result wrapping) cost more CPU than the
statements themselves; on SQLite, aiosqlite also hands every driver call (cursor, execute,
fetch, close, commit) to its worker thread and back, each hand-off costing about as much as a
small statement. So a transaction here is a generator that yields ``(sql, parameters)`` and is
sent each statement's rows back: written once, it runs as a single call in aiosqlite's worker
thread on SQLite (one hand-off for the whole transaction), and statement by statement over
asyncpg on PostgreSQL. Connections still come from (and return to) the engine's pool.

The SQL is plain and written for both databases (``?`` placeholders, numbered for asyncpg).
Values go in as Python objects: JSON columns as dicts or lists, times as aware datetimes, which
``_sqlite_value`` stores the way SQLAlchemy does on SQLite; ``json_of`` and ``utc`` read either
database's column values back.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Generator, Sequence
from datetime import UTC, datetime
from functools import cache
from typing import Any, TypeVar, cast

import asyncpg
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.util import greenlet_spawn

T = TypeVar("T")
Statement = tuple[str, tuple[Any, ...]]
Rows = Sequence[Sequence[Any]]
# Yields each statement, is sent its rows, returns the transaction's result.
Operation = Generator[Statement, Rows, T]
# What a transaction here may raise when the database refuses or cannot be reached: the pool's
# (connecting), each driver's own, and the network's.
DATABASE_ERRORS = (
    SQLAlchemyError,
    sqlite3.Error,
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    OSError,
)


class Transactions:
    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        backend = engine.dialect.name
        if backend not in ("sqlite", "postgresql"):
            raise ValueError(f"the driver path needs SQLite or PostgreSQL, not {backend}")
        self._sqlite = backend == "sqlite"

    @classmethod
    def of(cls, sessions: async_sessionmaker[AsyncSession]) -> Transactions:
        """On the engine the session factory is bound to."""
        return cls(cast(AsyncEngine, sessions.kw["bind"]))

    async def run(self, operation: Operation[T], *, write: bool = True, durable: bool = False) -> T:
        """The operation's statements, in one transaction when it writes (a lone read needs
        none: a single statement sees one snapshot).

        ``durable``: something outside the database follows this commit (a tool call starts),
        so it must survive a power loss, not only the process dying. SQLite commits it with
        ``synchronous=FULL`` (every connection's default here is NORMAL, ``db.engine``);
        PostgreSQL makes every commit durable already."""
        # The pool's connection itself, without SQLAlchemy's Connection around it (its
        # set-up and shielded close cost more than a small statement).
        connection = await self._engine.raw_connection()
        try:
            driver: Any = connection.driver_connection
            if self._sqlite:
                # aiosqlite's own queue to its thread (SQLAlchemy's adapter uses it the same way).
                result: T = await driver._execute(
                    _run_sqlite, driver._conn, operation, write, durable
                )
                return result
            try:
                return await _run_asyncpg(driver, operation, write)
            except BaseException as exc:
                # Only the server's own refusal leaves the connection known good; after a
                # dropped connection, a protocol error or a cancelled statement it is never
                # handed out again.
                if driver.is_closed() or not isinstance(exc, asyncpg.PostgresError):
                    await greenlet_spawn(connection.invalidate)
                raise
        finally:
            await greenlet_spawn(connection.close)

    async def read(self, sql: str, *parameters: Any) -> Rows:
        """One statement's rows, outside a transaction."""

        def read() -> Operation[Rows]:
            return (yield (sql, parameters))

        return await self.run(read(), write=False)


def _run_sqlite(
    connection: sqlite3.Connection, operation: Operation[T], write: bool, durable: bool = False
) -> T:
    if durable:
        connection.execute("PRAGMA synchronous=FULL")
        try:
            return _run_sqlite(connection, operation, write)
        finally:
            connection.execute("PRAGMA synchronous=NORMAL")
    if write:
        # Take the write lock first: a deferred transaction that reads, then writes, can fail
        # to upgrade its lock where this one waits its turn (busy_timeout).
        connection.execute("BEGIN IMMEDIATE")
    try:
        sql, parameters = next(operation)
        while True:
            rows = connection.execute(sql, [_sqlite_value(v) for v in parameters]).fetchall()
            sql, parameters = operation.send(rows)
    except StopIteration as done:
        if write:
            connection.commit()
        result: T = done.value
        return result
    except BaseException:
        if write:
            connection.rollback()
        raise


async def _run_asyncpg(connection: Any, operation: Operation[T], write: bool) -> T:
    if not write:
        return await _statements(connection, operation)
    async with connection.transaction():
        return await _statements(connection, operation)


async def _statements(connection: Any, operation: Operation[T]) -> T:
    try:
        sql, parameters = next(operation)
        while True:
            rows = await connection.fetch(_numbered(sql), *[_pg_value(v) for v in parameters])
            sql, parameters = operation.send(rows)
    except StopIteration as done:
        result: T = done.value
        return result


@cache
def insert_sql(table: str, columns: Sequence[str], count: int) -> str:
    """``INSERT`` of ``count`` rows in one statement: the driver binds every value at once, where
    ``executemany`` takes the GIL back for each row (under load, a row per switch interval).
    ``table`` and ``columns`` are the caller's constants, never input."""
    row = "(" + ", ".join("?" * len(columns)) + ")"
    values = ", ".join([row] * count)
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES {values}"  # noqa: S608


@cache
def _numbered(sql: str) -> str:
    """``?`` placeholders as asyncpg's ``$1``, ``$2``..."""
    counter = iter(range(1, sql.count("?") + 1))
    return re.sub(r"\?", lambda _: f"${next(counter)}", sql)


def _sqlite_value(value: Any) -> Any:
    if isinstance(value, datetime):
        # As SQLAlchemy's SQLite DateTime stores it (UTC, without an offset).
        return value.replace(tzinfo=None).isoformat(" ", "microseconds")
    if isinstance(value, dict | list):
        return json.dumps(value)
    return value


def _pg_value(value: Any) -> Any:
    # SQLAlchemy's asyncpg codec for `json` takes the document's text.
    return json.dumps(value) if isinstance(value, dict | list) else value


def json_of(value: Any) -> Any:
    """A JSON column's value: text on SQLite, already decoded on PostgreSQL."""
    return json.loads(value) if isinstance(value, str) else value


def utc(value: Any) -> datetime:
    """A time column's value: text on SQLite, a datetime on PostgreSQL; aware, in UTC."""
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    assert isinstance(moment, datetime)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
