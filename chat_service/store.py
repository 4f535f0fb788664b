"""Conversations, their messages and their durable events."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from chat_service.errors import ConversationNotFound
from chat_service.events import TurnEvent, TurnFinished, TurnStatus, stored_event
from chat_service.messages import StoredMessage, message_row, stored_message
from db.base import utcnow
from db.models import Conversation, ConversationEvent, ConversationMessage
from llm_service.types import Message, SystemMessage


class ConversationStatus(StrEnum):
    """Where the conversation's turn is; moved only by compare-and-set (``move``)."""

    IDLE = "idle"
    RUNNING = "running"
    AWAITING_APPROVAL = "awaiting_approval"


@dataclass(frozen=True, slots=True)
class ConversationInfo:
    id: str
    api_key_id: int
    model: str
    bundle: str | None
    roles: frozenset[str]
    status: ConversationStatus
    turn_started_at: datetime | None
    created_at: datetime

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "model": self.model,
            "bundle": self.bundle,
            "status": self.status.value,
            "created_at": self.created_at.isoformat(),
        }


def _info(row: Conversation) -> ConversationInfo:
    return ConversationInfo(
        id=row.id,
        api_key_id=row.api_key_id,
        model=row.model,
        bundle=row.bundle,
        roles=frozenset(row.roles or ()),
        status=ConversationStatus(row.status),
        turn_started_at=row.turn_started_at,
        created_at=row.created_at,
    )


_PAUSED = TurnStatus.AWAITING_APPROVAL


class ConversationStore:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def create(
        self,
        api_key_id: int,
        model: str,
        roles: Iterable[str],
        system_prompt: str | None = None,
        bundle: str | None = None,
    ) -> ConversationInfo:
        row = Conversation(
            id=str(uuid.uuid4()),
            api_key_id=api_key_id,
            model=model,
            bundle=bundle,
            roles=sorted(roles),
            status=ConversationStatus.IDLE.value,
        )
        async with self._sessions.begin() as session:
            session.add(row)
            await session.flush()
            if system_prompt:
                session.add(message_row(row.id, SystemMessage(system_prompt)))
        return _info(row)

    async def get(self, conversation_id: str) -> ConversationInfo:
        async with self._sessions() as session:
            row = await session.get(Conversation, conversation_id)
        if row is None:
            raise ConversationNotFound(f"No conversation `{conversation_id}`.")
        return _info(row)

    async def move(
        self,
        conversation_id: str,
        expected: ConversationStatus,
        new: ConversationStatus,
        roles: Iterable[str] | None = None,
    ) -> bool:
        """Compare-and-set of the turn status: only one replica wins a move."""
        values: dict[str, Any] = {"status": new.value, "updated_at": utcnow()}
        if new is ConversationStatus.RUNNING:
            values["turn_started_at"] = utcnow()
        if roles is not None:
            values["roles"] = sorted(roles)
        async with self._sessions.begin() as session:
            result = await session.execute(
                update(Conversation)
                .where(Conversation.id == conversation_id, Conversation.status == expected.value)
                .values(**values)
            )
        return bool(getattr(result, "rowcount", 0))

    async def append(self, conversation_id: str, message: Message) -> StoredMessage:
        row = message_row(conversation_id, message)
        async with self._sessions.begin() as session:
            session.add(row)
        return StoredMessage(row.id, message, row.created_at)

    async def messages(self, conversation_id: str, after_id: int = 0) -> list[StoredMessage]:
        async with self._sessions() as session:
            rows = await session.scalars(
                select(ConversationMessage)
                .where(
                    ConversationMessage.conversation_id == conversation_id,
                    ConversationMessage.id > after_id,
                )
                .order_by(ConversationMessage.id)
            )
            return [stored_message(row) for row in rows]

    async def add_event(self, conversation_id: str, event: TurnEvent) -> int:
        row = ConversationEvent(conversation_id=conversation_id, type=event.type, data=event.data)
        async with self._sessions.begin() as session:
            session.add(row)
        return row.id

    async def events(self, conversation_id: str, after_id: int) -> list[tuple[int, TurnEvent]]:
        async with self._sessions() as session:
            rows = await session.scalars(
                select(ConversationEvent)
                .where(
                    ConversationEvent.conversation_id == conversation_id,
                    ConversationEvent.id > after_id,
                )
                .order_by(ConversationEvent.id)
            )
            return [(row.id, stored_event(row.type, row.data)) for row in rows]

    async def follow(
        self, conversation_id: str, after: int, poll_seconds: float
    ) -> AsyncIterator[tuple[int, TurnEvent]]:
        """The durable events after ``after``, as they are stored (by any replica), until a turn
        completes or fails, or the conversation is idle with nothing more to read. Polls the
        database every ``poll_seconds``; callers bound the wait."""
        cursor = after
        while True:
            for event_id, event in await self.events(conversation_id, cursor):
                cursor = event_id
                yield event_id, event
                if isinstance(event, TurnFinished) and event.status is not _PAUSED:
                    return
            conversation = await self.get(conversation_id)
            if conversation.status is ConversationStatus.IDLE and not await self.events(
                conversation_id, cursor
            ):
                return
            await asyncio.sleep(poll_seconds)

    async def stale_turns(self, started_before: datetime) -> list[str]:
        async with self._sessions() as session:
            rows = await session.scalars(
                select(Conversation.id).where(
                    Conversation.status == ConversationStatus.RUNNING.value,
                    Conversation.turn_started_at < started_before,
                )
            )
            return list(rows)
