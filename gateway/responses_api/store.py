"""Stored responses (``store: true``), each owned by the key that made it.

A response another key made is, to the caller, a response that does not exist: the same 404, so
ids cannot be probed across keys.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import TypeAdapter
from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from chat_service.messages import AnyMessage
from db.models import StoredResponse
from gateway.errors import ResponseNotFound
from llm_service.types import JSON, Message

_CONVERSATION: TypeAdapter[list[Message]] = TypeAdapter(list[AnyMessage])


@dataclass(frozen=True, slots=True)
class Stored:
    response: JSON
    conversation: list[Message]
    items: list[JSON] | None  # None: stored before items were kept
    input_items: list[JSON] | None


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a finished response leaves for its follow-ups (see ``StoredResponse``)."""

    conversation: list[Message]
    items: list[JSON]
    input_items: list[JSON]


def not_found(response_id: str, param: str | None = None) -> ResponseNotFound:
    return ResponseNotFound(f"No response with id `{response_id}` was found.", param=param)


class ResponseStore:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def save(self, key_id: int, model: str, response: JSON, outcome: Outcome) -> None:
        row = StoredResponse(
            id=response["id"],
            api_key_id=key_id,
            model=model,
            response=response,
            conversation=_CONVERSATION.dump_python(outcome.conversation, mode="json"),
            items=outcome.items,
            input_items=outcome.input_items,
        )
        async with self._sessions.begin() as session:
            session.add(row)

    async def get(self, response_id: str, key_id: int) -> Stored | None:
        async with self._sessions() as session:
            row = await session.scalar(
                select(StoredResponse).where(
                    StoredResponse.id == response_id, StoredResponse.api_key_id == key_id
                )
            )
        if row is None:
            return None
        conversation = _CONVERSATION.validate_python(row.conversation)
        return Stored(row.response, conversation, row.items, row.input_items)

    async def delete(self, response_id: str, key_id: int) -> bool:
        async with self._sessions.begin() as session:
            result = await session.execute(
                delete(StoredResponse).where(
                    StoredResponse.id == response_id, StoredResponse.api_key_id == key_id
                )
            )
        return bool(getattr(result, "rowcount", 0))
