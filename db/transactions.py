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

A row nothing in its transaction reads back (an audit row, an event, a tool result) is yielded
as an ``Insert``: it is sent no rows at once and written as the transaction ends, with the other
such rows of the same statement as one multi-row insert. On PostgreSQL, where each statement is a
round trip, all of them are one statement (joined by ``WITH``), and an operation that only
inserts so runs as that single statement, without ``BEGIN`` and ``COMMIT``.

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
from functools import lru_cache
from typing import Any, Generic, NamedTuple, TypeVar, cast

import asyncpg
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.pool import PoolProxiedConnection
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
# asyncpg's limit on one statement's parameters.
_MAX_PARAMETERS = 32_767


class Insert(NamedTuple):
    """A single-row ``INSERT ... VALUES (?, ...)`` (without ``RETURNING``) whose row nothing in
    the transaction reads back: sent no rows, and written as the transaction ends (see the
    module doc), each statement's rows in the order they were yielded."""

    sql: str
    parameters: tuple[Any, ...]


class _Run(Generic[T]):
    """An operation as it runs: the statement it waits on (None once it is done), its result,
    and its ``Insert`` rows held for the end, by statement, in order."""

    def __init__(self, operation: Operation[T]) -> None:
        self._operation = operation
        self.inserts: dict[str, list[tuple[Any, ...]]] = {}
        self.pending: Statement | None = None
        self.result: T
        self._advance(None)  # to its first statement

    def send(self, rows: Rows) -> None:
        self._advance(rows)

    def _advance(self, rows: Rows | None) -> None:
        try:
            statement = next(self._operation) if rows is None else self._operation.send(rows)
            while isinstance(statement, Insert):
                self.inserts.setdefault(statement.sql, []).append(statement.parameters)
                statement = self._operation.send(())
        except StopIteration as done:
            self.pending, self.result = None, done.value
            return
        self.pending = statement


class Transactions:
    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        backend = engine.dialect.name
        if backend not in ("sqlite", "postgresql"):
            raise ValueError(f"the driver path needs SQLite or PostgreSQL, not {backend}")
        self._sqlite = backend == "sqlite"

    @property
    def postgresql(self) -> bool:
        """Whether a caller may use a PostgreSQL-only statement (see ``statement``)."""
        return not self._sqlite

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
        connection = await self._connect()
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

    async def _connect(self) -> PoolProxiedConnection:
        """A pool connection. ``raw_connection`` passes on the driver's own error where
        ``Engine.connect`` wraps it: a server refusing the connection (PostgreSQL starting up or
        shutting down) raised an error outside ``DATABASE_ERRORS``, which stopped the loops that
        catch those (the usage recorder). Wrapped here as SQLAlchemy's ``DBAPIError``."""
        dbapi = self._engine.dialect.loaded_dbapi
        try:
            return await self._engine.raw_connection()
        except dbapi.Error as exc:
            raise DBAPIError.instance(
                None, None, exc, dbapi.Error, dialect=self._engine.dialect
            ) from exc

    async def read(self, sql: str, *parameters: Any) -> Rows:
        """One statement's rows, outside a transaction."""
        return await self.run(_single(sql, parameters), write=False)

    async def statement(self, sql: str, *parameters: Any) -> Rows:
        """One statement that writes, committed. On PostgreSQL a statement is a transaction of
        its own: a ``WITH`` whose parts write several tables commits whole or not at all, in one
        round trip instead of ``BEGIN``, the statements and ``COMMIT``."""
        return await self.run(_single(sql, parameters), write=self._sqlite)


def _single(sql: str, parameters: tuple[Any, ...]) -> Operation[Rows]:
    return (yield (sql, parameters))


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
        run = _Run(operation)
        while run.pending is not None:
            sql, parameters = run.pending
            run.send(connection.execute(sql, [_sqlite_value(v) for v in parameters]).fetchall())
        for sql, rows in run.inserts.items():
            connection.executemany(sql, ([_sqlite_value(v) for v in row] for row in rows))
        if write:
            connection.commit()
        return run.result
    except BaseException:
        if write:
            connection.rollback()
        raise


async def _run_asyncpg(connection: Any, operation: Operation[T], write: bool) -> T:
    run = _Run(operation)
    if run.pending is None:
        # Only inserts: as one statement, a transaction of its own.
        inserts = _pg_inserts(run.inserts)
        if len(inserts) <= 1 or not write:
            await _pg_statements(connection, inserts)
            return run.result
    if not write:
        return await _pg_run(connection, run)
    async with connection.transaction():
        return await _pg_run(connection, run)


async def _pg_run(connection: Any, run: _Run[T]) -> T:
    while run.pending is not None:
        sql, parameters = run.pending
        run.send(await connection.fetch(_numbered(sql), *[_pg_value(v) for v in parameters]))
    await _pg_statements(connection, _pg_inserts(run.inserts))
    return run.result


async def _pg_statements(connection: Any, statements: list[Statement]) -> None:
    for sql, parameters in statements:
        await connection.execute(_numbered(sql), *[_pg_value(v) for v in parameters])


def _pg_inserts(inserts: dict[str, list[tuple[Any, ...]]]) -> list[Statement]:
    """The held rows as few statements as the parameter limit allows: each insert's rows as one
    multi-row ``VALUES``, joined by ``WITH`` (PostgreSQL runs a data-modifying ``WITH`` part
    whether or not anything reads it, once, in the order of its rows)."""
    statements: list[Statement] = []
    parts: list[tuple[str, int]] = []
    parameters: list[Any] = []
    for sql, rows in inserts.items():
        count = 0
        for row in rows:
            if len(parameters) + len(row) > _MAX_PARAMETERS:
                if count:
                    parts.append((sql, count))
                statements.append((_joined(tuple(parts)), tuple(parameters)))
                parts, parameters, count = [], [], 0
            parameters.extend(row)
            count += 1
        parts.append((sql, count))
    if parts:
        statements.append((_joined(tuple(parts)), tuple(parameters)))
    return statements


@lru_cache(maxsize=512)
def _joined(parts: tuple[tuple[str, int], ...]) -> str:
    """One statement of ``(insert, rows)`` parts: each a multi-row ``VALUES``, all but the last
    under ``WITH``."""
    inserts = []
    for sql, count in parts:
        head, _, row = sql.rpartition(" VALUES ")
        if not head or not row.startswith("(") or not row.endswith(")"):
            raise ValueError(f"an Insert is one row of values, nothing after it: {sql!r}")
        inserts.append(f"{head} VALUES {', '.join([row] * count)}")
    *before, last = inserts
    if not before:
        return last
    named = ", ".join(f"i{n} AS ({insert})" for n, insert in enumerate(before))
    return f"WITH {named} {last}"


@lru_cache(maxsize=256)
def insert_sql(table: str, columns: Sequence[str], count: int) -> str:
    """``INSERT`` of ``count`` rows in one statement: the driver binds every value at once, where
    ``executemany`` takes the GIL back for each row (under load, a row per switch interval).
    ``table`` and ``columns`` are the caller's constants, never input."""
    row = "(" + ", ".join("?" * len(columns)) + ")"
    values = ", ".join([row] * count)
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES {values}"  # noqa: S608


@lru_cache(maxsize=1024)
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
