"""A conversation's history as the store keeps it in memory, and the reads that bring it up to
date (see ``chat_service.store``'s module doc)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from chat_service import store_sql as sql
from chat_service.messages import MESSAGES, StoredMessage, message_bytes
from db.transactions import Operation, Rows, json_of
from llm_service.types import Message


def _message_of(row: Sequence[Any]) -> Message:
    """A row of ``sql.HISTORY``: the count, the message's id, the message."""
    return MESSAGES.validate_python(json_of(row[2]))


@dataclass(slots=True)
class History:
    messages: list[Message] = field(default_factory=list)
    last_id: int = 0  # the cursor: the id of the last message held
    bytes: int = 0  # of the messages held, as JSON (``max_history_bytes``)
    # Read in the transaction that began the turn: the first model call needs no read.
    current: bool = False

    def add(self, rows: Rows) -> None:
        """Rows of ``sql.HISTORY`` (or rows that begin as they do)."""
        for row in rows:
            if row[1] is not None:  # the count's row when nothing is new
                self.append(_message_of(row), row[1])

    def append(self, message: Message, message_id: int) -> None:
        self.messages.append(message)
        self.bytes += message_bytes(message)
        self.last_id = message_id

    def clear(self) -> None:
        self.messages.clear()
        self.bytes = 0
        self.last_id = 0

    def begun(self, rows: Rows, caller: StoredMessage) -> None:
        """A turn begun in one statement (``store_postgres.BEGIN_TURN``): its rows were read in
        the snapshot before the caller's message was added, so that message comes after them."""
        if rows[0][0] != len(self.messages):
            # A row hid behind the cursor: the model's call reads the history again, whole.
            self.clear()
            return
        self.add(rows)
        self.append(caller.message, caller.id)
        self.current = True


def read_new_rows(conversation_id: str, history: History) -> Operation[None]:
    """Adds the messages after the cached ones; all of them when a row hid behind the cursor."""
    after = history.last_id
    rows: Rows = yield (sql.HISTORY, (conversation_id, after, conversation_id, after))
    if rows[0][0] != len(history.messages):
        history.clear()
        rows = yield (sql.HISTORY, (conversation_id, 0, conversation_id, 0))
    history.add(rows)
