"""Conversations, their messages and their durable events.

Messages are append-only, so a turn never reloads the whole history: the store keeps each
recent conversation's messages in memory and reads only the rows after the last one it holds
(``history``). Another replica (or worker) may have appended meanwhile: those rows are simply
newer ones. A row that committed out of id order (two writers at once on PostgreSQL) would hide
behind the cursor: the same read counts the rows up to the cursor and reloads when they are more
than it holds. The turn's own writes go as single transactions of plain INSERT/UPDATE
statements (the message with its event, the final event with the status move), not ORM units
of work.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, cast

from sqlalchemy import Row, Table, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from chat_service.errors import ConversationNotFound
from chat_service.events import (
    MessageCompleted,
    TurnEvent,
    TurnFinished,
    TurnStatus,
    stored_event,
)
from chat_service.messages import (
    MESSAGES,
    StoredMessage,
    legacy_message,
    message_json,
    message_row,
    stored_message,
)
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


_PAUSED = TurnStatus.AWAITING_APPROVAL
# The tables themselves: plain INSERT/UPDATE statements, no ORM unit of work on the turn's path.
_CONVERSATIONS = cast(Table, Conversation.__table__)
_MESSAGES = cast(Table, ConversationMessage.__table__)
_EVENTS = cast(Table, ConversationEvent.__table__)
_INFO_COLUMNS = (
    Conversation.id,
    Conversation.api_key_id,
    Conversation.model,
    Conversation.bundle,
    Conversation.roles,
    Conversation.status,
    Conversation.turn_started_at,
    Conversation.created_at,
)
_MESSAGE_COLUMNS = (
    ConversationMessage.id,
    ConversationMessage.role,
    ConversationMessage.message,
    ConversationMessage.content,
    ConversationMessage.tool_calls,
    ConversationMessage.tool_call_id,
    ConversationMessage.name,
    ConversationMessage.is_error,
    ConversationMessage.created_at,
)
# Conversations whose history is kept in memory, most recently used last. A turn in progress or
# waiting for approval is what benefits; an evicted one is read again whole, once.
HISTORY_CACHE_SIZE = 256


def _info_of(row: Any) -> ConversationInfo:
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


def _message_of(row: Row[Any]) -> StoredMessage:
    message = legacy_message(row) if row.message is None else MESSAGES.validate_python(row.message)
    return StoredMessage(row.id, message, row.created_at)


@dataclass(slots=True)
class _History:
    messages: list[StoredMessage]

    @property
    def last_id(self) -> int:
        return self.messages[-1].id if self.messages else 0


class ConversationStore:
    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], cache_size: int = HISTORY_CACHE_SIZE
    ) -> None:
        self._sessions = sessions
        self._cache_size = cache_size
        self._histories: OrderedDict[str, _History] = OrderedDict()

    async def create(
        self,
        api_key_id: int,
        model: str,
        roles: Iterable[str],
        system_prompt: str | None = None,
        bundle: str | None = None,
    ) -> ConversationInfo:
        now = utcnow()
        info = ConversationInfo(
            id=str(uuid.uuid4()),
            api_key_id=api_key_id,
            model=model,
            bundle=bundle,
            roles=frozenset(roles),
            status=ConversationStatus.IDLE,
            turn_started_at=None,
            created_at=now,
        )
        async with self._sessions.begin() as session:
            await session.execute(
                insert(_CONVERSATIONS).values(
                    id=info.id,
                    api_key_id=api_key_id,
                    model=model,
                    bundle=bundle,
                    roles=sorted(info.roles),
                    status=info.status.value,
                    created_at=now,
                    updated_at=now,
                )
            )
            if system_prompt:
                await self._insert_message(session, info.id, SystemMessage(system_prompt), now)
        return info

    async def get(self, conversation_id: str) -> ConversationInfo:
        async with self._sessions() as session:
            found = await session.execute(
                select(*_INFO_COLUMNS).where(Conversation.id == conversation_id)
            )
            row = found.one_or_none()
        if row is None:
            raise ConversationNotFound(f"No conversation `{conversation_id}`.")
        return _info_of(row)

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

    async def begin_turn(
        self, conversation_id: str, roles: Iterable[str], message: Message
    ) -> tuple[ConversationInfo, MessageCompleted] | None:
        """Idle to running (compare-and-set, with the requester's roles), the caller's message
        and its ``message.completed`` event: one transaction. None when a turn is in progress."""
        now = utcnow()
        async with self._sessions.begin() as session:
            moved = await session.execute(
                update(_CONVERSATIONS)
                .where(
                    _CONVERSATIONS.c.id == conversation_id,
                    _CONVERSATIONS.c.status == ConversationStatus.IDLE.value,
                )
                .values(
                    status=ConversationStatus.RUNNING.value,
                    updated_at=now,
                    turn_started_at=now,
                    roles=sorted(roles),
                )
                .returning(*_INFO_COLUMNS)
            )
            row = moved.one_or_none()
            if row is None:
                return None
            completed = await self._append_completed(session, conversation_id, message, now)
        return _info_of(row), completed

    async def append_completed(self, conversation_id: str, message: Message) -> MessageCompleted:
        """The message and its ``message.completed`` event, in one transaction."""
        async with self._sessions.begin() as session:
            return await self._append_completed(session, conversation_id, message, utcnow())

    async def _append_completed(
        self, session: AsyncSession, conversation_id: str, message: Message, now: datetime
    ) -> MessageCompleted:
        stored = await self._insert_message(session, conversation_id, message, now)
        completed = MessageCompleted(stored)
        await self._insert_event(session, conversation_id, completed)
        return completed

    @staticmethod
    async def _insert_message(
        session: AsyncSession, conversation_id: str, message: Message, now: datetime
    ) -> StoredMessage:
        inserted = await session.execute(
            insert(_MESSAGES)
            .values(
                conversation_id=conversation_id,
                role=message.role,
                message=message_json(message),
                is_error=False,
                created_at=now,
            )
            .returning(_MESSAGES.c.id)
        )
        return StoredMessage(inserted.scalar_one(), message, now)

    async def finish_turn(
        self,
        conversation_id: str,
        event: TurnFinished,
        expected: ConversationStatus,
        new: ConversationStatus,
    ) -> bool:
        """Store how the turn ended and move its status, in one transaction: a follower that
        sees the conversation move always finds the event."""
        async with self._sessions.begin() as session:
            await self._insert_event(session, conversation_id, event)
            moved = await session.execute(
                update(_CONVERSATIONS)
                .where(
                    _CONVERSATIONS.c.id == conversation_id,
                    _CONVERSATIONS.c.status == expected.value,
                )
                .values(status=new.value, updated_at=utcnow())
            )
        return bool(getattr(moved, "rowcount", 0))

    async def append(self, conversation_id: str, message: Message) -> StoredMessage:
        row = message_row(conversation_id, message)
        async with self._sessions.begin() as session:
            session.add(row)
        return StoredMessage(row.id, message, row.created_at)

    async def history(self, conversation_id: str) -> Sequence[Message]:
        """The conversation's messages, oldest first, as a model call needs them: the rows
        after the cached ones are read, never the whole history again (see the module doc)."""
        cached = self._histories.pop(conversation_id, None) or _History([])
        after = cached.last_id
        async with self._sessions() as session:
            rows = (
                await session.execute(
                    select(*_MESSAGE_COLUMNS)
                    .where(
                        ConversationMessage.conversation_id == conversation_id,
                        ConversationMessage.id > after,
                    )
                    .order_by(ConversationMessage.id)
                )
            ).all()
            if after:
                held = await session.scalar(
                    select(func.count()).where(
                        ConversationMessage.conversation_id == conversation_id,
                        ConversationMessage.id <= after,
                    )
                )
                if held != len(cached.messages):  # a row landed behind the cursor: start over
                    return await self._reload(conversation_id)
        cached.messages.extend(_message_of(row) for row in rows)
        self._remember(conversation_id, cached)
        return [stored.message for stored in cached.messages]

    async def _reload(self, conversation_id: str) -> Sequence[Message]:
        self._histories.pop(conversation_id, None)
        return await self.history(conversation_id)

    def _remember(self, conversation_id: str, history: _History) -> None:
        self._histories[conversation_id] = history
        while len(self._histories) > self._cache_size:
            self._histories.popitem(last=False)

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
        async with self._sessions.begin() as session:
            return await self._insert_event(session, conversation_id, event)

    @staticmethod
    async def _insert_event(session: AsyncSession, conversation_id: str, event: TurnEvent) -> int:
        inserted = await session.execute(
            insert(_EVENTS)
            .values(
                conversation_id=conversation_id,
                type=event.type,
                data=event.data,
                created_at=utcnow(),
            )
            .returning(_EVENTS.c.id)
        )
        event_id: int = inserted.scalar_one()
        return event_id

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
