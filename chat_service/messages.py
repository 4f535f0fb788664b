"""Messages as stored and as shown: one pydantic TypeAdapter over the canonical message union.

A message is stored whole, as the adapter's JSON (the ``message`` column), so a round trip keeps
every field: thinking blocks with their signatures, redacted thinking, images, raw arguments.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from pydantic import (
    BeforeValidator,
    Field,
    PlainSerializer,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    WrapSerializer,
)

from db.models import ConversationMessage
from llm_service.types import Message

# A time in JSON as the API has always written it (``+00:00``, not pydantic's ``Z``).
Timestamp = Annotated[datetime, PlainSerializer(datetime.isoformat, when_used="json")]

AnyMessage = Annotated[Message, Field(discriminator="role")]
MESSAGES: TypeAdapter[Message] = TypeAdapter(AnyMessage)


def message_bytes(message: Message) -> int:
    """The message's size as JSON: what ``max_history_bytes`` counts."""
    return len(MESSAGES.dump_json(message))


def history_bytes(messages: Iterable[Message]) -> int:
    return sum(map(message_bytes, messages))


def message_json(message: Message) -> dict[str, Any]:
    """The message as JSON: every field, ``role`` naming its kind."""
    data: dict[str, Any] = MESSAGES.dump_python(message, mode="json")
    return data


@dataclass(frozen=True, slots=True)
class StoredMessage:
    id: int
    message: AnyMessage
    created_at: Timestamp

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = STORED_MESSAGE.dump_python(self, mode="json")
        return data


_ROW_FIELDS = ("id", "created_at")


def _nest(data: Any) -> Any:
    """Callers see a stored message flat (its id and time beside the message's own fields)."""
    if not isinstance(data, dict):
        return data
    message = {k: v for k, v in data.items() if k not in _ROW_FIELDS}
    return {**{k: data.get(k) for k in _ROW_FIELDS}, "message": message}


def _flatten(stored: StoredMessage, serialize: SerializerFunctionWrapHandler) -> dict[str, Any]:
    data = serialize(stored)
    return {"id": data["id"], **data["message"], "created_at": data["created_at"]}


# The JSON shape of a stored message, in the API and in persisted `message.completed` events.
FlatStoredMessage = Annotated[StoredMessage, BeforeValidator(_nest), WrapSerializer(_flatten)]
STORED_MESSAGE: TypeAdapter[StoredMessage] = TypeAdapter(FlatStoredMessage)


def message_row(conversation_id: str, message: Message) -> ConversationMessage:
    return ConversationMessage(
        conversation_id=conversation_id,
        role=message.role,
        message=message_json(message),
    )


def stored_message(row: ConversationMessage) -> StoredMessage:
    return StoredMessage(row.id, MESSAGES.validate_python(row.message), row.created_at)
