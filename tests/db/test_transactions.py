"""db.transactions: a generator's statements run as one transaction on the driver's connection,
on both databases, with the values SQLAlchemy's columns would store; rows yielded as ``Insert``
land as the transaction ends, in order, or not at all."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from db.engine import create_engine
from db.transactions import Insert, Operation, Rows, Transactions, json_of, utc

_TABLE = "CREATE TABLE notes (id INTEGER PRIMARY KEY, body JSON, at TIMESTAMP WITH TIME ZONE)"
_ADD = "INSERT INTO notes (id, body, at) VALUES (?, ?, ?) RETURNING id"
_ALL = "SELECT id, body, at FROM notes ORDER BY id"


class _Refused(Exception):
    pass


def _add(*ids: int, fail: bool = False) -> Operation[list[int]]:
    added = []
    for note_id in ids:
        rows: Rows = yield (_ADD, (note_id, {"n": note_id, "tags": ["a"]}, _NOON))
        added.append(rows[0][0])
    if fail:
        raise _Refused
    return added


_NOON = datetime(2026, 11, 27, 12, 0, 0, 123456, tzinfo=UTC)


async def test_a_transaction_commits_whole_and_values_read_back(database_url: str) -> None:
    engine = create_engine(database_url)
    try:
        transactions = Transactions(engine)
        await transactions.run(_create())
        assert await transactions.run(_add(1, 2)) == [1, 2]
        rows = await transactions.read(_ALL)
        assert [(r[0], json_of(r[1]), utc(r[2])) for r in rows] == [
            (1, {"n": 1, "tags": ["a"]}, _NOON),
            (2, {"n": 2, "tags": ["a"]}, _NOON),
        ]
    finally:
        await engine.dispose()


async def test_a_failing_transaction_keeps_nothing(database_url: str) -> None:
    engine = create_engine(database_url)
    try:
        transactions = Transactions(engine)
        await transactions.run(_create())
        with pytest.raises(_Refused):
            await transactions.run(_add(1, 2, fail=True))
        assert list(await transactions.read(_ALL)) == []
    finally:
        await engine.dispose()


def _create() -> Operation[None]:
    yield (_TABLE, ())


_LOG = "CREATE TABLE log (id INTEGER PRIMARY KEY, note INTEGER, line TEXT)"
_LINE = "INSERT INTO log (id, note, line) VALUES (?, ?, ?)"
_NOTE = "INSERT INTO notes (id, body, at) VALUES (?, ?, ?)"


def _noted(*ids: int, fail: bool = False) -> Operation[list[int]]:
    """Notes and log lines interleaved: the notes as ``Insert``s, one as a plain statement."""
    yield Insert(_LINE, (1, None, "begin"))
    for note_id in ids:
        yield Insert(_NOTE, (note_id, {"n": note_id}, _NOON))
        yield Insert(_LINE, (note_id + 1, note_id, f"added {note_id}"))
    read = yield (_ADD, (100, None, _NOON))  # read back as usual, in the meantime
    if fail:
        raise _Refused
    return [row[0] for row in read]


async def test_inserts_land_at_the_end_in_order_or_not_at_all(database_url: str) -> None:
    engine = create_engine(database_url)
    try:
        transactions = Transactions(engine)
        await transactions.run(_create())
        await transactions.run(_log())
        with pytest.raises(_Refused):
            await transactions.run(_noted(1, 2, fail=True))
        assert list(await transactions.read(_ALL)) == []
        assert list(await transactions.read("SELECT id FROM log")) == []
        assert await transactions.run(_noted(1, 2)) == [100]
        notes = await transactions.read(_ALL)
        assert [(r[0], json_of(r[1]), utc(r[2])) for r in notes] == [
            (1, {"n": 1}, _NOON),
            (2, {"n": 2}, _NOON),
            (100, None, _NOON),
        ]
        lines = await transactions.read("SELECT id, note, line FROM log ORDER BY id")
        assert [tuple(r) for r in lines] == [
            (1, None, "begin"),
            (2, 1, "added 1"),
            (3, 2, "added 2"),
        ]
    finally:
        await engine.dispose()


def _inserts_only(count: int) -> Operation[None]:
    for line in range(count):
        yield Insert(_LINE, (line, None, f"line {line}"))
    yield Insert(_NOTE, (1, None, _NOON))


async def test_inserts_alone_and_past_the_parameter_limit(database_url: str) -> None:
    # 12,000 rows of 3 values: more than one PostgreSQL statement may take.
    engine = create_engine(database_url)
    try:
        transactions = Transactions(engine)
        await transactions.run(_create())
        await transactions.run(_log())
        await transactions.run(_inserts_only(12_000))
        lines = await transactions.read("SELECT id, line FROM log ORDER BY id")
        assert [tuple(r) for r in lines] == [(n, f"line {n}") for n in range(12_000)]
        assert [r[0] for r in await transactions.read(_ALL)] == [1]
    finally:
        await engine.dispose()


def _log() -> Operation[None]:
    yield (_LOG, ())


def _synchronous(fail: bool = False) -> Operation[int]:
    rows: Rows = yield ("PRAGMA synchronous", ())
    if fail:
        raise _Refused
    level: int = rows[0][0]
    return level


_NORMAL, _FULL = 1, 2


async def test_sqlite_commits_at_normal_and_a_durable_transaction_at_full(
    sqlite_url: str,
) -> None:
    engine = create_engine(sqlite_url)
    try:
        transactions = Transactions(engine)
        assert await transactions.run(_synchronous()) == _NORMAL
        assert await transactions.run(_synchronous(), durable=True) == _FULL
        with pytest.raises(_Refused):
            await transactions.run(_synchronous(fail=True), durable=True)
        # The pool hands out the same connection again, back at NORMAL however it ended.
        assert [await transactions.run(_synchronous()) for _ in range(3)] == [_NORMAL] * 3
    finally:
        await engine.dispose()
