"""db.transactions: a generator's statements run as one transaction on the driver's connection,
on both databases, with the values SQLAlchemy's columns would store."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from db.engine import create_engine
from db.transactions import Operation, Rows, Transactions, json_of, utc

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
