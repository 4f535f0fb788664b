"""Retention deletes raw usage and audit rows past their age in batches, on one replica at a time,
and leaves the hourly rollups."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from sqlalchemy import func, insert, select

from accounts.retention import RetentionJob, RetentionJobSettings, RetentionResult
from db.base import utcnow
from db.engine import create_engine, session_factory
from db.models import AuditEvent, Conversation, ConversationMessage, WebhookDelivery
from db.usage_models import UsageHourly, UsageRecord
from migrations.commands import upgrade


async def _scenario(database_url: str) -> tuple[object, ...]:
    engine = create_engine(database_url)
    sessions = session_factory(engine)
    now = utcnow()
    old, recent = now - timedelta(days=40), now - timedelta(days=5)
    usage = [
        {"request_id": f"r{n}", "route": "/", "model": "m", "latency_ms": 1, "status_code": 200,
         "created_at": old if n < 7 else recent}
        for n in range(10)
    ]  # fmt: skip
    audit = [
        {"action": "x", "detail": {}, "created_at": now - timedelta(days=400 if n < 3 else 1)}
        for n in range(5)
    ]
    try:
        async with sessions.begin() as session:
            await session.execute(insert(UsageRecord.__table__), usage)
            await session.execute(insert(AuditEvent.__table__), audit)
            session.add(UsageHourly(hour=old.replace(minute=0, second=0, microsecond=0),
                                    api_key_id=0, team="", model="m", provider="",
                                    requests=7))  # fmt: skip

        def job() -> RetentionJob:
            settings = RetentionJobSettings(batch_size=2, pause_seconds=0)
            return RetentionJob(sessions, usage_days=30, audit_days=365, settings=settings)

        first, second = job(), job()
        results = await asyncio.gather(first.run_once(), second.run_once())
        holder = first if results[0] is not None else second
        again = await holder.run_once()  # the holder renews its lease and finds nothing left
        async with sessions() as session:
            usage_left = await session.scalar(select(func.count(UsageRecord.id)))
            audit_left = await session.scalar(select(func.count(AuditEvent.id)))
            rollups = await session.scalar(select(func.sum(UsageHourly.requests)))
        return results, again, usage_left, audit_left, rollups
    finally:
        await engine.dispose()


def test_retention_deletes_old_rows_in_batches_on_one_replica(database_url: str) -> None:
    upgrade(database_url)
    results, again, usage_left, audit_left, rollups = asyncio.run(_scenario(database_url))

    ran = [result for result in results if result is not None]  # type: ignore[attr-defined]
    assert ran == [RetentionResult(usage_deleted=7, audit_deleted=3)]  # the other one skipped
    assert again == RetentionResult(0, 0)
    assert usage_left == 3
    assert audit_left == 2
    assert rollups == 7  # reports keep the history


async def _conversations_and_webhooks(database_url: str) -> tuple[object, ...]:
    engine = create_engine(database_url)
    sessions = session_factory(engine)
    now = utcnow()
    old = now - timedelta(days=100)
    conversations = [
        {"id": f"c{n}", "api_key_id": 1, "model": "m", "roles": [], "status": status,
         "created_at": old, "updated_at": updated}
        for n, (status, updated) in enumerate(
            [("idle", old), ("idle", old), ("awaiting_approval", old), ("idle", now)]
        )
    ]  # fmt: skip
    messages = [
        {"conversation_id": f"c{n}", "role": "user", "message": {"role": "user", "content": "x"},
         "is_error": False, "created_at": old}
        for n in range(4)
    ]  # fmt: skip
    deliveries = [
        {"id": f"w{n}", "webhook": "h", "event": "e", "payload": {}, "status": status,
         "attempts": 1, "next_attempt_at": old, "created_at": old}
        for n, status in enumerate(["delivered", "gave_up", "pending"])
    ]  # fmt: skip
    try:
        async with sessions.begin() as session:
            await session.execute(insert(Conversation.__table__), conversations)
            await session.execute(insert(ConversationMessage.__table__), messages)
            await session.execute(insert(WebhookDelivery.__table__), deliveries)
        job = RetentionJob(
            sessions,
            usage_days=None,
            audit_days=None,
            settings=RetentionJobSettings(batch_size=1, pause_seconds=0),
            conversations_days=90,
            webhooks_days=30,
        )
        result = await job.run_once()
        async with sessions() as session:
            kept = set(await session.scalars(select(Conversation.id)))
            kept_messages = await session.scalar(select(func.count(ConversationMessage.id)))
            pending = set(await session.scalars(select(WebhookDelivery.id)))
        return result, kept, kept_messages, pending
    finally:
        await engine.dispose()


def test_idle_conversations_and_finished_deliveries_expire(database_url: str) -> None:
    upgrade(database_url)
    result, kept, kept_messages, pending = asyncio.run(_conversations_and_webhooks(database_url))

    assert result == RetentionResult(0, 0, 0, conversations_deleted=2, webhooks_deleted=2)
    assert kept == {"c2", "c3"}  # a paused turn still waits on its approvals
    assert kept_messages == 2  # the deleted conversations' messages went with them
    assert pending == {"w2"}
