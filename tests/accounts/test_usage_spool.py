"""The usage spool: the entries a process held when it was killed with SIGKILL are written by
the next start, each once; a batch that committed is never written again; a live process's file
is left alone; without a spool, a kill loses them as before."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from accounts.pricing import PriceBook
from accounts.usage import UsageEntry, UsageRecorder
from db.engine import create_engine, session_factory
from db.transactions import Transactions
from db.usage_models import UsageDaily, UsageHourly, UsageRecord
from migrations.commands import upgrade
from tests.accounts.test_usage import _allow_connections
from tests.support.databases import postgres_database

ROOT = Path(__file__).resolve().parents[2]
# A worker that records entries, says so, and waits to be killed before its flush (an hour away).
_WORKER = """
import asyncio, sys
from pathlib import Path
from accounts.pricing import PriceBook
from accounts.usage import UsageEntry, UsageRecorder
from db.engine import create_engine
from db.transactions import Transactions

async def main(url: str, spool: str, count: int) -> None:
    recorder = UsageRecorder(
        Transactions(create_engine(url)), flush_seconds=3600, prices=PriceBook({}),
        spool_dir=Path(spool) if spool else None,
    )
    await recorder.start()
    for number in range(count):
        recorder.record(UsageEntry(
            f"r{number}", 1, "k", "/v1/chat/completions", "m", "p", 1, 2, 3, 200, None
        ))
    print("recorded", flush=True)
    await asyncio.Event().wait()

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""


# One spooled entry, as a process writes it.
_LINE = (
    b'{"request_id":"r1","api_key_id":1,"key_name":"k","route":"/v1/chat/completions",'
    b'"model":"m","provider":"p","prompt_tokens":1,"completion_tokens":2,"latency_ms":3,'
    b'"status_code":200,"error_type":null,"at":1700000000.25}\n'
)


def _entry(number: int) -> UsageEntry:
    return UsageEntry(f"r{number}", 1, "k", "/v1/chat/completions", "m", "p", 1, 2, 3, 200, None)


async def _killed_worker(url: str, spool: Path | None, count: int) -> None:
    worker = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _WORKER,
        url,
        str(spool or ""),
        str(count),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
    )
    assert worker.stdout is not None
    try:
        async with asyncio.timeout(60):
            assert await worker.stdout.readline() == b"recorded\n"
    finally:
        worker.send_signal(signal.SIGKILL)
        await worker.wait()
    assert worker.returncode == -signal.SIGKILL


def _spooling(engine: AsyncEngine, spool: Path) -> UsageRecorder:
    """A recorder on ``engine`` spooling to ``spool``, flushed only when told (or at stop)."""
    return UsageRecorder(
        Transactions(engine), flush_seconds=60, prices=PriceBook({}), spool_dir=spool
    )


async def _ids(engine: AsyncEngine) -> list[str]:
    async with session_factory(engine)() as session:
        return sorted(await session.scalars(select(UsageRecord.request_id)))


async def _rollup_tokens(engine: AsyncEngine) -> tuple[object, ...]:
    async with session_factory(engine)() as session:
        hourly = (
            await session.execute(
                select(func.sum(UsageHourly.requests), func.sum(UsageHourly.prompt_tokens))
            )
        ).one()
        daily = (
            await session.execute(
                select(func.sum(UsageDaily.requests), func.sum(UsageDaily.completion_tokens))
            )
        ).one()
    return (*hourly, *daily)


@pytest.fixture
def postgres_url() -> Iterator[str]:
    with postgres_database() as url:
        yield url


async def test_the_entries_of_a_killed_process_are_written_once_at_the_next_start(
    database_url: str, tmp_path: Path
) -> None:
    await asyncio.to_thread(upgrade, database_url)
    spool = tmp_path / "spool"
    await _killed_worker(database_url, spool, 20)
    engine = create_engine(database_url)
    recorder = _spooling(engine, spool)
    try:
        assert await _ids(engine) == []
        await recorder.start()
        ids = await _ids(engine)
        rollups = await _rollup_tokens(engine)
        await recorder.aclose()
    finally:
        await engine.dispose()

    assert ids == sorted(f"r{number}" for number in range(20))
    assert rollups == (20, 20, 20, 40)
    assert list(spool.iterdir()) == []  # replayed, and the clean stop left no empty file


async def test_without_a_spool_a_killed_process_loses_what_it_held(
    sqlite_url: str, tmp_path: Path
) -> None:
    await asyncio.to_thread(upgrade, sqlite_url)
    await _killed_worker(sqlite_url, None, 5)
    engine = create_engine(sqlite_url)
    recorder = UsageRecorder(Transactions(engine), flush_seconds=60, prices=PriceBook({}))
    try:
        await recorder.start()
        recorder.record(_entry(7))
        await recorder.aclose()
        ids = await _ids(engine)
    finally:
        await engine.dispose()

    assert ids == ["r7"]


async def test_a_file_whose_batch_committed_is_removed_without_writing_it_again(
    database_url: str, tmp_path: Path
) -> None:
    await asyncio.to_thread(upgrade, database_url)
    spool = tmp_path / "spool"
    engine = create_engine(database_url)
    first = _spooling(engine, spool)
    try:
        await first.start()
        for number in range(3):
            first.record(_entry(number))
        (spooled,) = spool.iterdir()
        content = spooled.read_bytes()
        await first.flush()
        assert not spooled.exists()
        # As if the process died between the batch's commit and the file's removal.
        (spool / "committed.jsonl").write_bytes(content)
        second = _spooling(engine, spool)
        await second.start()
        assert not (spool / "committed.jsonl").exists()
        await second.aclose()
        await first.aclose()
        ids = await _ids(engine)
        rollups = await _rollup_tokens(engine)
    finally:
        await engine.dispose()

    assert ids == ["r0", "r1", "r2"]
    assert rollups == (3, 3, 3, 6)


async def test_a_file_a_live_process_holds_is_not_replayed_by_another(
    database_url: str, tmp_path: Path
) -> None:
    await asyncio.to_thread(upgrade, database_url)
    spool = tmp_path / "spool"
    engine = create_engine(database_url)
    live = _spooling(engine, spool)
    try:
        await live.start()
        live.record(_entry(1))
        other = _spooling(engine, spool)
        await other.start()
        before = await _ids(engine)
        await other.aclose()
        await live.aclose()
        after = await _ids(engine)
    finally:
        await engine.dispose()

    assert before == []
    assert after == ["r1"]
    assert list(spool.iterdir()) == []


async def test_a_torn_last_line_is_skipped(sqlite_url: str, tmp_path: Path) -> None:
    await asyncio.to_thread(upgrade, sqlite_url)
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "dead.jsonl").write_bytes(_LINE + _LINE.replace(b"r1", b"r2")[:40])
    engine = create_engine(sqlite_url)
    recorder = _spooling(engine, spool)
    try:
        await recorder.start()
        await recorder.aclose()
        async with session_factory(engine)() as session:
            rows = (
                await session.execute(select(UsageRecord.request_id, UsageRecord.created_at))
            ).all()
    finally:
        await engine.dispose()

    assert [(request_id, at.timestamp()) for request_id, at in rows] == [("r1", 1700000000.25)]


async def test_a_failed_batch_keeps_its_files_until_it_commits_opening_no_more(
    postgres_url: str, tmp_path: Path
) -> None:
    await asyncio.to_thread(upgrade, postgres_url)
    spool = tmp_path / "spool"
    engine = create_engine(postgres_url)
    recorder = _spooling(engine, spool)
    try:
        await recorder.start()
        await _allow_connections(postgres_url, False)
        recorder.record(_entry(1))
        await recorder.flush()  # refused: the entry stays pending, and on disk
        recorder.record(_entry(2))
        await recorder.flush()  # refused again: retries the same file, opens none
        during = sorted(path.read_bytes() for path in spool.iterdir())
        await _allow_connections(postgres_url, True)
        recorder.record(_entry(3))
        await recorder.flush()
        left = [path for path in spool.iterdir() if path.stat().st_size]
        ids = await _ids(engine)
        await recorder.aclose()
    finally:
        await _allow_connections(postgres_url, True)
        await engine.dispose()

    assert len(during) == 2
    assert b'"r1"' in during[0]
    assert b'"r2"' in during[1]
    assert b'"r1"' not in during[1]
    assert left == []
    assert ids == ["r1", "r2", "r3"]


async def test_orphans_the_database_refused_at_start_are_written_once_it_answers(
    postgres_url: str, tmp_path: Path
) -> None:
    await asyncio.to_thread(upgrade, postgres_url)
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "dead.jsonl").write_bytes(_LINE)
    engine = create_engine(postgres_url)
    recorder = _spooling(engine, spool)
    try:
        await _allow_connections(postgres_url, False)
        await recorder.start()  # refused: logged, and the gateway serves on
        kept = (spool / "dead.jsonl").exists()
        await _allow_connections(postgres_url, True)
        await recorder.aclose()
        ids = await _ids(engine)
    finally:
        await _allow_connections(postgres_url, True)
        await engine.dispose()

    assert kept
    assert ids == ["r1"]
    assert list(spool.iterdir()) == []
