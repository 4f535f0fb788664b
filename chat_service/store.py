"""Conversations, their messages and their durable events.

Messages are append-only, so a turn never reloads the whole history: the store keeps each
recent conversation's messages in memory and reads only the rows after the last one it holds.
Another replica (or worker) may have appended meanwhile: those rows are simply newer ones. A row
that committed out of id order (two writers at once on PostgreSQL) would hide behind the cursor:
the same statement counts the rows up to the cursor, and the history is read again whole when
they are more than the cache holds.

A turn's writes are two transactions (``db.transactions``): beginning it (the
compare-and-set to running, the caller's message, its event, and the rows it has not seen) and
ending it (the answer, its event, the final event and the release). On PostgreSQL each is one
statement (``store_postgres``), the beginning falling back to the general way whenever it did
not begin the turn. What never changes about a conversation (its key and model) is kept too,
so checking the caller's access reads nothing.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, NamedTuple

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from chat_service import store_postgres as at_once
from chat_service import store_sql as sql
from chat_service.errors import ConversationNotFound
from chat_service.events import (
    MessageCompleted,
    TurnEvent,
    TurnFinished,
    TurnStatus,
    stored_event,
)
from chat_service.messages import (
    StoredMessage,
    message_json,
    message_row,
    stored_message,
)
from chat_service.store_history import History, read_new_rows
from db.base import utcnow
from db.models import Conversation, ConversationEvent, ConversationMessage
from db.transactions import Insert, Operation, Rows, Transactions, json_of, utc
from llm_service.types import AssistantMessage, Message, SystemMessage


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


class ConversationOwner(NamedTuple):
    """What never changes about a conversation: safe to keep, on any replica."""

    api_key_id: int
    model: str


_PAUSED = TurnStatus.AWAITING_APPROVAL
_IDLE = ConversationStatus.IDLE.value
_RUNNING = ConversationStatus.RUNNING.value
# Conversations whose history is kept in memory, most recently used last. A turn in progress or
# waiting for approval is what benefits; an evicted one is read again whole, once.
HISTORY_CACHE_SIZE = 256
# ... and at most this many bytes of them: histories reach ``max_history_bytes`` (16 MiB).
HISTORY_CACHE_BYTES = 256 * 1024 * 1024


def _info_of(row: Sequence[Any]) -> ConversationInfo:
    return ConversationInfo(
        id=row[0],
        api_key_id=row[1],
        model=row[2],
        bundle=row[3],
        roles=frozenset(json_of(row[4]) or ()),
        status=ConversationStatus(row[5]),
        turn_started_at=None if row[6] is None else utc(row[6]),
        created_at=utc(row[7]),
    )


def _add_message(conversation_id: str, message: Message, now: datetime) -> Operation[StoredMessage]:
    row = (conversation_id, message.role, message_json(message), False, now)
    rows = yield (sql.ADD_MESSAGE, row)
    return StoredMessage(rows[0][0], message, now)


def _add_event(conversation_id: str, event: TurnEvent, now: datetime) -> Operation[None]:
    yield Insert(sql.EVENT, (conversation_id, event.type, event.data, now))


def completing(conversation_id: str, message: Message) -> Operation[MessageCompleted]:
    """Adds the message and its ``message.completed`` event: for a transaction that must store
    them with other writes (a tool round's proposals, ``ToolCallStore.propose``)."""
    now = utcnow()
    completed = MessageCompleted((yield from _add_message(conversation_id, message, now)))
    yield from _add_event(conversation_id, completed, now)
    return completed


class ConversationStore:
    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], cache_size: int = HISTORY_CACHE_SIZE
    ) -> None:
        self._sessions = sessions
        self._transactions = Transactions.of(sessions)
        self._cache_size = cache_size
        self._histories: OrderedDict[str, History] = OrderedDict()
        self._owners: OrderedDict[str, ConversationOwner] = OrderedDict()

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

        def create() -> Operation[None]:
            # Nothing is read back: on PostgreSQL the rows go in as one statement.
            row = (info.id, api_key_id, model, bundle, sorted(info.roles), _IDLE, now, now)
            yield Insert(sql.CREATE, row)
            if system_prompt:
                system = SystemMessage(system_prompt)
                yield Insert(sql.MESSAGE, (info.id, system.role, message_json(system), False, now))

        await self._transactions.run(create())
        self._remember(self._owners, info.id, ConversationOwner(api_key_id, model))
        return info

    async def get(self, conversation_id: str) -> ConversationInfo:
        def get() -> Operation[Rows]:
            return (yield (sql.GET, (conversation_id,)))

        rows = await self._transactions.run(get(), write=False)
        if not rows:
            raise ConversationNotFound(f"No conversation `{conversation_id}`.")
        info = _info_of(rows[0])
        self._remember(self._owners, info.id, ConversationOwner(info.api_key_id, info.model))
        return info

    async def owner(self, conversation_id: str) -> ConversationOwner:
        """The conversation's key and model: read once, then kept (they never change). A
        conversation deleted since is found missing when its turn begins."""
        known = self._owners.get(conversation_id)
        if known is not None:
            self._owners.move_to_end(conversation_id)
            return known
        info = await self.get(conversation_id)
        return ConversationOwner(info.api_key_id, info.model)

    async def move(
        self,
        conversation_id: str,
        expected: ConversationStatus,
        new: ConversationStatus,
        roles: Iterable[str] | None = None,
    ) -> bool:
        """Compare-and-set of the turn status: only one replica wins a move."""
        now = utcnow()
        running = new is ConversationStatus.RUNNING
        values: list[Any] = [new.value, now, *([now] if running else [])]
        if roles is not None:
            values.append(sorted(roles))
        values += [conversation_id, expected.value]
        statement = sql.MOVES[running, roles is not None]

        def move() -> Operation[bool]:
            return bool((yield (statement, tuple(values))))

        return await self._transactions.run(move())

    async def begin_turn(
        self, conversation_id: str, roles: Iterable[str], message: Message
    ) -> tuple[ConversationInfo, MessageCompleted] | None:
        """Idle to running (compare-and-set, with the requester's roles), the caller's message,
        its ``message.completed`` event, and the history's new rows: one transaction. None when
        a turn is in progress; ConversationNotFound when there is no such conversation."""
        now = utcnow()
        history = self._histories.pop(conversation_id, None) or History()
        if self._transactions.postgresql:
            rows, completed = await at_once.begin_turn(
                self._transactions,
                conversation_id,
                statuses=(_RUNNING, _IDLE),
                roles=roles,
                message=message,
                now=now,
                after=history.last_id,
            )
            if completed is not None:
                history.begun(rows, completed.message)
                self._remember(self._histories, conversation_id, history)
                return _info_of(rows[0][at_once.CONVERSATION_COLUMNS]), completed
        start = (_RUNNING, now, now, sorted(roles), conversation_id, _IDLE)

        def begin() -> Operation[tuple[ConversationInfo, MessageCompleted] | bool]:
            moved = yield (sql.START, start)
            if not moved:
                return bool((yield (sql.STATUS, (conversation_id,))))
            completed = MessageCompleted((yield from _add_message(conversation_id, message, now)))
            yield from _add_event(conversation_id, completed, now)
            yield from read_new_rows(conversation_id, history)
            return _info_of(moved[0]), completed

        begun = await self._transactions.run(begin())
        if begun is False:
            self._owners.pop(conversation_id, None)
            raise ConversationNotFound(f"No conversation `{conversation_id}`.")
        if begun is True:
            self._remember(self._histories, conversation_id, history)
            return None
        history.current = True
        self._remember(self._histories, conversation_id, history)
        return begun

    async def finish_turn(
        self,
        conversation_id: str,
        event: TurnFinished,
        expected: ConversationStatus,
        new: ConversationStatus,
        answer: AssistantMessage | None = None,
    ) -> tuple[MessageCompleted | None, bool]:
        """Store how the turn ended (after its ``answer`` with its event, when given) and move
        its status, in one transaction: a follower that sees the conversation move always finds
        the event. The answer's event, and whether the status moved."""
        if self._transactions.postgresql:
            return await at_once.finish_turn(
                self._transactions,
                conversation_id,
                event=event,
                statuses=(new.value, expected.value),
                answer=answer,
                now=utcnow(),
            )
        move = (new.value, utcnow(), conversation_id, expected.value)

        def finish() -> Operation[tuple[MessageCompleted | None, bool]]:
            now = utcnow()
            completed = None
            if answer is not None:
                stored = yield from _add_message(conversation_id, answer, now)
                completed = MessageCompleted(stored)
                yield from _add_event(conversation_id, completed, now)
            yield from _add_event(conversation_id, event, now)
            return completed, bool((yield (sql.MOVE, move)))

        return await self._transactions.run(finish())

    async def append(self, conversation_id: str, message: Message) -> StoredMessage:
        row = message_row(conversation_id, message)
        async with self._sessions.begin() as session:
            session.add(row)
        return StoredMessage(row.id, message, row.created_at)

    async def history(self, conversation_id: str) -> Sequence[Message]:
        """The conversation's messages, oldest first, as a model call needs them: the rows
        after the cached ones are read, never the whole history again (see the module doc)."""
        history = self._histories.pop(conversation_id, None) or History()
        if history.current:
            history.current = False
        else:
            await self._transactions.run(read_new_rows(conversation_id, history), write=False)
        self._remember(self._histories, conversation_id, history)
        return tuple(history.messages)

    async def history_bytes(self, conversation_id: str) -> int:
        """The size of the history as JSON, as of the last read on this process (a turn reads
        the newer rows and checks again: ``TurnRunner``)."""
        history = self._histories.get(conversation_id)
        if history is None:
            await self.history(conversation_id)
            history = self._histories.get(conversation_id)
        return 0 if history is None else history.bytes

    def _remember(self, cache: OrderedDict[str, Any], conversation_id: str, value: Any) -> None:
        cache[conversation_id] = value
        cache.move_to_end(conversation_id)
        while len(cache) > self._cache_size:
            cache.popitem(last=False)
        if cache is self._histories:
            held = sum(history.bytes for history in self._histories.values())
            while held > HISTORY_CACHE_BYTES and len(cache) > 1:
                held -= cache.popitem(last=False)[1].bytes

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

    async def add_event(self, conversation_id: str, event: TurnEvent) -> None:
        await self._transactions.run(_add_event(conversation_id, event, utcnow()))

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
