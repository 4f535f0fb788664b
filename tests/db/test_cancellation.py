"""A background loop stopped while its commit fails stops (db/cancellation.py).

SQLAlchemy runs a transaction's commit to completion when the task is cancelled meanwhile, then
raises the commit's error in place of the cancellation. Staged exactly: the loop's insert waits
for a row another transaction holds, the loop is stopped, the other transaction commits, so the
waiting insert fails with ``IntegrityError`` after the cancellation arrived. Without
``raise_if_cancelled`` the loop logs the error and goes on forever, and ``aclose`` never returns
(a worker that never finished its shutdown).
"""

from __future__ import annotations

import asyncio
import time

from sqlalchemy import insert, text

from db.base import utcnow
from db.engine import create_engine, session_factory
from db.models import MaintenanceLease
from db.refresher import Refresher
from tests.support.databases import postgres_database


async def _until_waiting_for_a_lock(url: str) -> None:
    engine = create_engine(url)
    deadline = time.monotonic() + 20
    query = text("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'")
    try:
        # Autocommit: in one transaction PostgreSQL would answer from its first snapshot of the
        # statistics, taken perhaps before the insert began to wait.
        async with engine.connect() as connection:
            await connection.execution_options(isolation_level="AUTOCOMMIT")
            while not await connection.scalar(query):  # each check is a query: nothing spins idle
                assert time.monotonic() < deadline, "the loop's insert never waited for the row"
    finally:
        await engine.dispose()


async def _stop_while_the_commit_fails(url: str) -> None:
    engine = create_engine(url)
    sessions = session_factory(engine)
    lease = {"name": "job", "holder": "other", "expires_at": utcnow()}
    try:
        async with engine.begin() as connection:
            await connection.run_sync(MaintenanceLease.__table__.create)
        async with engine.connect() as holder:
            await holder.execute(insert(MaintenanceLease).values(lease))  # not committed yet
            attempts = 0

            async def refresh() -> None:
                nonlocal attempts
                attempts += 1
                if attempts > 1:  # went on after the stop: wait here to be stopped again
                    await asyncio.Event().wait()
                async with sessions.begin() as session:  # the insert is sent by the commit
                    session.add(MaintenanceLease(**{**lease, "holder": "loop"}))

            refresher = Refresher("lease", refresh, seconds=0)
            refresher.start()
            await _until_waiting_for_a_lock(url)
            closing = asyncio.ensure_future(refresher.aclose())  # cancels before the commit below
            await holder.commit()  # the waiting insert now fails: a duplicate key
            done, _ = await asyncio.wait({closing}, timeout=30)
            assert closing in done, f"the loop did not stop (refreshed {attempts} times)"
            assert attempts == 1
    finally:
        await engine.dispose()


def test_a_loop_stopped_while_its_commit_fails_stops() -> None:
    with postgres_database() as url:
        asyncio.run(_stop_while_the_commit_fails(url))
