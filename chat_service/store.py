"""Conversations, their messages and their durable events."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from chat_service.errors import ConversationNotFound
from chat_service.events import TurnEvent
from db.base import utcnow
from db.models import Conversation, ConversationEvent, ConversationMessage
from llm_service.types import (
    AssistantMessage,
    Message,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)


@dataclass(frozen=True, slots=True)
class ConversationInfo:
    id: str
    api_key_id: int
    model: str
    bundle: str | None
    roles: frozenset[str]
    status: str
    turn_started_at: datetime | None
    created_at: datetime

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "model": self.model,
            "bundle": self.bundle,
            "status": self.status,
            "created_at": self.created_at.isoformat(),
        }


@dataclass(frozen=True, slots=True)
class StoredMessage:
    id: int
    message: Message
    created_at: datetime

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            **message_json(self.message),
            "created_at": self.created_at.isoformat(),
        }


def message_json(message: Message) -> dict[str, Any]:
    match message:
        case SystemMessage(content=content):
            return {"role": "system", "content": content}
        case UserMessage(content=str() as content):
            return {"role": "user", "content": content}
        case UserMessage(content=parts):
            text = " ".join(p.text for p in parts if isinstance(p, TextPart))
            return {"role": "user", "content": text}
        case AssistantMessage(content=content, tool_calls=calls):
            return {
                "role": "assistant",
                "content": content,
                "tool_calls": [
                    {"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls
                ],
            }
        case ToolResultMessage():
            return {
                "role": "tool",
                "tool_call_id": message.tool_call_id,
                "name": message.name,
                "content": message.content,
                "is_error": message.is_error,
            }
    raise AssertionError(f"unhandled message {message!r}")  # pragma: no cover


def message_row(conversation_id: str, message: Message) -> ConversationMessage:
    data = message_json(message)
    return ConversationMessage(
        conversation_id=conversation_id,
        role=data["role"],
        content=data.get("content"),
        tool_calls=data.get("tool_calls") or None,
        tool_call_id=data.get("tool_call_id"),
        name=data.get("name"),
        is_error=bool(data.get("is_error")),
    )


def _message(row: ConversationMessage) -> Message:
    if row.role == "system":
        return SystemMessage(row.content or "")
    if row.role == "user":
        return UserMessage(row.content or "")
    if row.role == "assistant":
        calls = tuple(
            ToolCall(c["id"], c["name"], dict(c["arguments"])) for c in row.tool_calls or ()
        )
        return AssistantMessage(content=row.content, tool_calls=calls)
    return ToolResultMessage(
        tool_call_id=row.tool_call_id or "",
        content=row.content or "",
        name=row.name,
        is_error=row.is_error,
    )


def _info(row: Conversation) -> ConversationInfo:
    return ConversationInfo(
        id=row.id,
        api_key_id=row.api_key_id,
        model=row.model,
        bundle=row.bundle,
        roles=frozenset(row.roles or ()),
        status=row.status,
        turn_started_at=row.turn_started_at,
        created_at=row.created_at,
    )


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
            status="idle",
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
        self, conversation_id: str, expected: str, new: str, roles: Iterable[str] | None = None
    ) -> bool:
        """Compare-and-set of the turn status: only one replica wins a move."""
        values: dict[str, Any] = {"status": new, "updated_at": utcnow()}
        if new == "running":
            values["turn_started_at"] = utcnow()
        if roles is not None:
            values["roles"] = sorted(roles)
        async with self._sessions.begin() as session:
            result = await session.execute(
                update(Conversation)
                .where(Conversation.id == conversation_id, Conversation.status == expected)
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
            return [StoredMessage(r.id, _message(r), r.created_at) for r in rows]

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
            return [(r.id, TurnEvent(r.type, r.data)) for r in rows]

    async def stale_turns(self, started_before: datetime) -> list[str]:
        async with self._sessions() as session:
            rows = await session.scalars(
                select(Conversation.id).where(
                    Conversation.status == "running", Conversation.turn_started_at < started_before
                )
            )
            return list(rows)
