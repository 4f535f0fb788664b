"""What the approval queue reads from the database: one page of held calls, and what their cards
need for all of them at once (a few queries a page, never a few a card)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from chat_service.messages import StoredMessage, stored_message
from chat_service.tool_call_view import CallState, ToolCallView, call_view
from db.models import Conversation, ConversationMessage, ToolCallRecord

PAGE_SIZE = 50
AWAITING = CallState.AWAITING_APPROVAL.value


@dataclass(frozen=True, slots=True)
class PendingPage:
    """Held calls, oldest first, ``size`` a page; ``number`` counts from 1."""

    calls: list[ToolCallView]
    number: int
    size: int
    total: int

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.size))

    @property
    def first(self) -> int:
        """The position of the page's first call (from 1), 0 when the page is empty."""
        return (self.number - 1) * self.size + 1 if self.calls else 0

    @property
    def last(self) -> int:
        return (self.number - 1) * self.size + len(self.calls)

    @property
    def previous(self) -> int | None:
        return self.number - 1 if self.number > 1 else None

    @property
    def next(self) -> int | None:
        return self.number + 1 if self.number < self.pages else None


async def pending_page(
    sessions: async_sessionmaker[AsyncSession], number: int, size: int = PAGE_SIZE
) -> PendingPage:
    """Page ``number`` of the held calls; past the last page, the last page."""
    async with sessions() as session:
        total = await session.scalar(
            select(func.count()).select_from(ToolCallRecord).where(ToolCallRecord.state == AWAITING)
        )
        total = int(total or 0)
        number = max(1, min(number, -(-total // size)))
        rows = await session.scalars(
            select(ToolCallRecord)
            .where(ToolCallRecord.state == AWAITING)
            .order_by(ToolCallRecord.created_at, ToolCallRecord.id)
            .offset((number - 1) * size)
            .limit(size)
        )
        calls = [call_view(row) for row in rows]
    return PendingPage(calls, number, size, total)


@dataclass(frozen=True, slots=True)
class SiblingCall:
    """Another call of the same conversation, as far as a card needs it (to name the server
    of an earlier result)."""

    call_id: str
    tool_name: str
    server: str | None


@dataclass(frozen=True, slots=True)
class CardContext:
    """Per conversation: its model, its messages (oldest first) and its calls."""

    models: dict[str, str]
    messages: dict[str, list[StoredMessage]]
    calls: dict[str, list[SiblingCall]]


async def card_context(
    sessions: async_sessionmaker[AsyncSession], conversation_ids: Iterable[str]
) -> CardContext:
    ids = sorted(set(conversation_ids))
    models: dict[str, str] = {}
    messages: dict[str, list[StoredMessage]] = {id_: [] for id_ in ids}
    calls: dict[str, list[SiblingCall]] = {id_: [] for id_ in ids}
    if not ids:
        return CardContext(models, messages, calls)
    async with sessions() as session:
        found = await session.execute(
            select(Conversation.id, Conversation.model).where(Conversation.id.in_(ids))
        )
        models = {id_: model for id_, model in found}
        rows = await session.scalars(
            select(ConversationMessage)
            .where(ConversationMessage.conversation_id.in_(ids))
            .order_by(ConversationMessage.id)
        )
        for row in rows:
            messages[row.conversation_id].append(stored_message(row))
        siblings = await session.execute(
            select(
                ToolCallRecord.conversation_id,
                ToolCallRecord.call_id,
                ToolCallRecord.tool_name,
                ToolCallRecord.server,
            )
            .where(ToolCallRecord.conversation_id.in_(ids))
            .order_by(ToolCallRecord.created_at)
        )
        for conversation_id, call_id, tool_name, server in siblings:
            calls[conversation_id].append(SiblingCall(call_id, tool_name, server))
    return CardContext(models, messages, calls)
