"""Retention: raw usage rows, audit events, stored Responses API answers, idle conversations
(with their messages, events, tool calls and inputs) and finished webhook deliveries older than
their configured age are deleted.

One replica at a time runs it, chosen by a lease row in ``maintenance_leases`` (a row, not a
PostgreSQL advisory lock, so it works the same on SQLite and holds across connection pools): the
replica whose conditional UPDATE (or first INSERT) takes the expired lease runs, and renews it
between batches. Rows go in batches of ``batch_size`` oldest first, one short transaction each,
with a pause between, so the deletes never hold locks long or starve the usage writes. The
hourly rollups are kept: reports over any period still work after the raw rows are gone.

Why batched deletes rather than time partitions on PostgreSQL: see docs/admin.md (Retention).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

import structlog
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import ColumnElement, delete, or_, select, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.orm import QueryableAttribute

from db.base import utcnow
from db.cancellation import raise_if_cancelled
from db.idempotent import insert_or_ignore
from db.models import (
    AuditEvent,
    Conversation,
    MaintenanceLease,
    StoredResponse,
    WebhookDelivery,
)
from db.usage_models import UsageRecord

log = structlog.get_logger("accounts.retention")
LEASE = "retention"


class RetentionJobSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    interval_seconds: float = Field(3600.0, gt=0, description="how often a replica tries to run")
    batch_size: int = Field(5000, gt=0, le=100_000, description="rows per delete")
    pause_seconds: float = Field(0.1, ge=0, description="between batches")


@dataclass(frozen=True, slots=True)
class RetentionResult:
    usage_deleted: int
    audit_deleted: int
    responses_deleted: int = 0
    conversations_deleted: int = 0
    webhooks_deleted: int = 0


_Table = type[UsageRecord | AuditEvent | StoredResponse | Conversation | WebhookDelivery]


class RetentionJob:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        *,
        usage_days: int | None,
        audit_days: int | None,
        settings: RetentionJobSettings,
        responses_days: int | None = None,
        conversations_days: int | None = None,
        webhooks_days: int | None = None,
    ) -> None:
        self._sessions = sessions
        self._usage_days = usage_days
        self._audit_days = audit_days
        self._responses_days = responses_days
        self._conversations_days = conversations_days
        self._webhooks_days = webhooks_days
        self._settings = settings
        self._holder = secrets.token_hex(8)
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        ages = (
            self._usage_days,
            self._audit_days,
            self._responses_days,
            self._conversations_days,
            self._webhooks_days,
        )
        if all(days is None for days in ages):
            return
        self._task = asyncio.create_task(self._run(), name="retention")

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def run_once(self) -> RetentionResult | None:
        """Deletes what is past retention; None when another replica holds the lease."""
        if not await self._take_lease():
            log.info("retention_skipped", reason="another replica or worker holds the lease")
            return None
        usage = await self._delete_older(UsageRecord, self._usage_days)
        audit = await self._delete_older(AuditEvent, self._audit_days)
        responses = await self._delete_older(StoredResponse, self._responses_days)
        # A conversation is past retention when idle that long (a paused or running turn is
        # not: its approvals and the sweeper still need it); its rows go by cascade.
        conversations = await self._delete_older(
            Conversation,
            self._conversations_days,
            Conversation.status == "idle",
            age=Conversation.updated_at,
        )
        # The outbox's pending rows are still to be delivered: only finished ones go.
        webhooks = await self._delete_older(
            WebhookDelivery, self._webhooks_days, WebhookDelivery.status != "pending"
        )
        result = RetentionResult(usage, audit, responses, conversations, webhooks)
        if any((usage, audit, responses, conversations, webhooks)):
            log.info(
                "retention_deleted",
                usage_records=usage,
                audit_events=audit,
                stored_responses=responses,
                conversations=conversations,
                webhook_deliveries=webhooks,
            )
        return result

    async def _delete_older(
        self,
        table: _Table,
        days: int | None,
        *conditions: ColumnElement[bool],
        age: QueryableAttribute[datetime] | None = None,
    ) -> int:
        if days is None:
            return 0
        cutoff = utcnow() - timedelta(days=days)
        column = table.created_at if age is None else age
        deleted = 0
        while True:
            oldest = (
                select(table.id)
                .where(column < cutoff, *conditions)
                .order_by(table.id)
                .limit(self._settings.batch_size)
            )
            async with self._sessions.begin() as session:
                result = await session.execute(delete(table).where(table.id.in_(oldest)))
            count = int(getattr(result, "rowcount", 0) or 0)
            deleted += count
            if count < self._settings.batch_size or not await self._take_lease():
                return deleted
            await asyncio.sleep(self._settings.pause_seconds)

    async def _take_lease(self) -> bool:
        now = utcnow()
        until = now + timedelta(seconds=self._settings.interval_seconds)
        async with self._sessions.begin() as session:
            result = await session.execute(
                update(MaintenanceLease)
                .where(
                    MaintenanceLease.name == LEASE,
                    or_(MaintenanceLease.expires_at < now, MaintenanceLease.holder == self._holder),
                )
                .values(holder=self._holder, expires_at=until)
            )
            if getattr(result, "rowcount", 0):
                return True
        # Insert-or-ignore: the first run of every replica and worker gets here at once.
        async with self._sessions.begin() as session:
            values = {"name": LEASE, "holder": self._holder, "expires_at": until}
            return await insert_or_ignore(session, MaintenanceLease, values, ["name"])

    async def _run(self) -> None:
        while True:
            try:
                await self.run_once()
            except SQLAlchemyError as exc:
                raise_if_cancelled()
                log.error("retention_failed", error=str(exc))
            await asyncio.sleep(self._settings.interval_seconds)
