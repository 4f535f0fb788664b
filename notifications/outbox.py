"""The outbox table: rows added where events happen, claimed under a lease for delivery.

A claim is a conditional UPDATE of the lease (and ``FOR UPDATE SKIP LOCKED`` on PostgreSQL, so
replicas polling together skip each other's rows instead of queueing on them): one replica holds
a row at a time; if it dies, the lease runs out and another retries it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from db.base import utcnow
from db.models import WebhookDelivery

PENDING, DELIVERED, GAVE_UP = "pending", "delivered", "gave_up"


@dataclass(frozen=True, slots=True)
class Delivery:
    id: str
    webhook: str  # its name in notifications.webhooks
    event: str
    payload: dict[str, Any]
    attempts: int


class Outbox:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def add(
        self, webhook: str, event: str, payload: dict[str, Any], delivery_id: str
    ) -> None:
        now = utcnow()
        async with self._sessions.begin() as session:
            session.add(
                WebhookDelivery(
                    id=delivery_id,
                    webhook=webhook,
                    event=event,
                    payload=payload,
                    status=PENDING,
                    attempts=0,
                    next_attempt_at=now,
                    created_at=now,
                )
            )

    async def claim(self, lease_seconds: float, limit: int = 20) -> list[Delivery]:
        now = utcnow()
        free = or_(WebhookDelivery.lease_until.is_(None), WebhookDelivery.lease_until < now)
        due = select(WebhookDelivery).where(
            WebhookDelivery.status == PENDING, WebhookDelivery.next_attempt_at <= now, free
        )
        claimed: list[Delivery] = []
        async with self._sessions.begin() as session:
            rows = await session.scalars(
                due.order_by(WebhookDelivery.next_attempt_at)
                .limit(limit)
                .with_for_update(skip_locked=True)
            )
            for row in list(rows):
                taken = await session.execute(
                    update(WebhookDelivery)
                    .where(WebhookDelivery.id == row.id, free)
                    .values(lease_until=now + timedelta(seconds=lease_seconds))
                    .execution_options(synchronize_session=False)
                )
                if taken.rowcount == 1:  # type: ignore[attr-defined]
                    claimed.append(
                        Delivery(row.id, row.webhook, row.event, dict(row.payload), row.attempts)
                    )
        return claimed

    async def delivered(self, delivery: Delivery) -> None:
        await self._finish(
            delivery, status=DELIVERED, delivered_at=utcnow(), attempts=delivery.attempts + 1
        )

    async def failed(self, delivery: Delivery, error: str, retry_at: datetime | None) -> None:
        values: dict[str, Any] = {"attempts": delivery.attempts + 1, "last_error": error[:2000]}
        if retry_at is None:
            values["status"] = GAVE_UP
        else:
            values["next_attempt_at"] = retry_at
        await self._finish(delivery, **values)

    async def _finish(self, delivery: Delivery, **values: Any) -> None:
        async with self._sessions.begin() as session:
            await session.execute(
                update(WebhookDelivery)
                .where(WebhookDelivery.id == delivery.id)
                .values(lease_until=None, **values)
            )

    async def pending(self) -> int:
        async with self._sessions() as session:
            count = await session.scalar(
                select(func.count()).where(WebhookDelivery.status == PENDING)
            )
        return int(count or 0)

    async def recent(self, status: str | None, limit: int = 100) -> list[dict[str, Any]]:
        query = select(WebhookDelivery).order_by(WebhookDelivery.created_at.desc()).limit(limit)
        if status is not None:
            query = query.where(WebhookDelivery.status == status)
        async with self._sessions() as session:
            rows = list(await session.scalars(query))
        return [
            {
                "id": row.id,
                "webhook": row.webhook,
                "event": row.event,
                "status": row.status,
                "attempts": row.attempts,
                "last_error": row.last_error,
                "next_attempt_at": row.next_attempt_at.isoformat(),
                "created_at": row.created_at.isoformat(),
                "delivered_at": row.delivered_at.isoformat() if row.delivered_at else None,
            }
            for row in rows
        ]


def new_delivery_id() -> str:
    return str(uuid.uuid4())
