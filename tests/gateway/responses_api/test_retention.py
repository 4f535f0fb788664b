"""Stored responses older than ``responses_retention_days`` are deleted by the retention job, in
batches; younger ones, and follow-ups naming them, keep working."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from sqlalchemy import insert, select

from accounts.retention import RetentionJob, RetentionJobSettings, RetentionResult
from db.base import utcnow
from db.engine import create_engine, session_factory
from db.models import StoredResponse
from migrations.commands import upgrade


async def _scenario(database_url: str) -> tuple[RetentionResult | None, list[str]]:
    engine = create_engine(database_url)
    sessions = session_factory(engine)
    now = utcnow()
    rows = [
        {"id": f"resp_{n}", "api_key_id": 1, "model": "m", "response": {}, "conversation": [],
         "created_at": now - timedelta(days=40 if n < 5 else 2)}
        for n in range(7)
    ]  # fmt: skip
    try:
        async with sessions.begin() as session:
            await session.execute(insert(StoredResponse.__table__), rows)
        settings = RetentionJobSettings(batch_size=2, pause_seconds=0)
        job = RetentionJob(
            sessions, usage_days=None, audit_days=None, settings=settings, responses_days=30
        )
        result = await job.run_once()
        async with sessions() as session:
            left = list(
                await session.scalars(select(StoredResponse.id).order_by(StoredResponse.id))
            )
        return result, left
    finally:
        await engine.dispose()


def test_old_stored_responses_are_deleted_in_batches(database_url: str) -> None:
    upgrade(database_url)
    result, left = asyncio.run(_scenario(database_url))

    assert result == RetentionResult(usage_deleted=0, audit_deleted=0, responses_deleted=5)
    assert left == ["resp_5", "resp_6"]
