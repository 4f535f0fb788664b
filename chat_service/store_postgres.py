"""A turn's beginning and its end as one PostgreSQL statement each.

On PostgreSQL every statement is a round trip, and ``ConversationStore``'s general forms of
these two transactions are six and five of them (``BEGIN``, the statements, ``COMMIT``). Here
each is one statement, a transaction of its own (``Transactions.statement``): PostgreSQL runs
every data-modifying part of a ``WITH`` exactly once, all in one snapshot, whether or not the
query reads its rows. Placeholders are numbered, as the statements are PostgreSQL's alone.

A ``message.completed`` event's data holds the id its message is given in the same statement:
the data's JSON text is sent in two halves (``around_id``), and the id goes between them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from chat_service.events import MessageCompleted, TurnFinished
from chat_service.messages import StoredMessage, message_json
from db.transactions import Rows, Transactions
from llm_service.types import AssistantMessage, Message

# Where a ``BEGIN_TURN`` row holds the new message's id, and the conversation (``moved.*``).
_ADDED_ID = 3
CONVERSATION_COLUMNS = slice(4, None)

# The compare-and-set to running, the caller's message, its event, and the rows after the
# cursor with the count of those up to it (as ``store_sql.HISTORY``), each row followed by the
# new message's id and the conversation. The history is read in the statement's snapshot, so
# the move must be of the very row version that snapshot saw (its ``xmin``, the transaction
# that wrote it, is the same; PostgreSQL's own optimistic-concurrency token): a turn another
# replica ended after the snapshot was taken, and before the row was locked here, is not moved
# over with its answer unseen. No rows then, and the general way decides (busy, missing, or it
# begins the turn with reads of its own).
BEGIN_TURN = """
WITH seen AS (SELECT xmin FROM conversations WHERE id = $1),
moved AS (
    UPDATE conversations SET status = $2, updated_at = $4, turn_started_at = $4, roles = $5::json
    WHERE id = $1 AND status = $3 AND xmin = (SELECT xmin FROM seen)
    RETURNING id, api_key_id, model, bundle, roles, status, turn_started_at, created_at
),
added AS (
    INSERT INTO conversation_messages (conversation_id, role, message, is_error, created_at)
    SELECT id, $6, $7::json, false, $4 FROM moved RETURNING id
),
completed AS (
    INSERT INTO conversation_events (conversation_id, type, data, created_at)
    SELECT $1, $8, ($9::text || added.id || $10::text)::json, $4 FROM added
)
SELECT held.n, m.id, m.message, added.id, moved.*
FROM (SELECT count(*) AS n FROM conversation_messages WHERE conversation_id = $1 AND id <= $11)
    AS held
CROSS JOIN moved CROSS JOIN added
LEFT JOIN conversation_messages AS m ON m.conversation_id = $1 AND m.id > $11
ORDER BY m.id
"""
# The answer (when $6 is not null) with its event, the turn's final event after it, and the
# move; the answer's id and whether the conversation moved.
FINISH_TURN = """
WITH added AS (
    INSERT INTO conversation_messages (conversation_id, role, message, is_error, created_at)
    SELECT $1, $5, $6::json, false, $4 WHERE $6::json IS NOT NULL RETURNING id
),
events AS (
    INSERT INTO conversation_events (conversation_id, type, data, created_at)
    SELECT $1, $7, ($8::text || added.id || $9::text)::json, $4 FROM added
    UNION ALL SELECT $1, $10, $11::json, $4
),
moved AS (
    UPDATE conversations SET status = $2, updated_at = $4 WHERE id = $1 AND status = $3
    RETURNING id
)
SELECT (SELECT id FROM added), (SELECT count(*) FROM moved)
"""

# How a ``message.completed`` event's data begins, up to its message's id.
_BEFORE_ID = '{"message": {"id": '


def around_id(completed: MessageCompleted) -> tuple[str, str]:
    """The JSON text of the event's data (its message's id 0) before and after that id."""
    text = json.dumps(completed.data)  # as ``db.transactions`` sends a JSON value
    if not text.startswith(_BEFORE_ID + "0,"):
        raise ValueError(f"a message.completed event's data begins otherwise: {text[:40]!r}")
    return _BEFORE_ID, text[len(_BEFORE_ID) + 1 :]


async def begin_turn(
    transactions: Transactions,
    conversation_id: str,
    *,
    statuses: tuple[str, str],
    roles: Iterable[str],
    message: Message,
    now: datetime,
    after: int,
) -> tuple[Rows, MessageCompleted | None]:
    """The rows of ``BEGIN_TURN`` (none when it did not begin the turn), and the caller's
    message as stored."""
    placeholder = MessageCompleted(StoredMessage(0, message, now))
    rows = await transactions.statement(
        BEGIN_TURN,
        conversation_id,
        *statuses,  # to, from
        now,
        sorted(roles),
        message.role,
        message_json(message),
        placeholder.type,
        *around_id(placeholder),
        after,
    )
    if not rows:
        return rows, None
    return rows, MessageCompleted(StoredMessage(rows[0][_ADDED_ID], message, now))


async def finish_turn(
    transactions: Transactions,
    conversation_id: str,
    *,
    event: TurnFinished,
    statuses: tuple[str, str],
    answer: AssistantMessage | None,
    now: datetime,
) -> tuple[MessageCompleted | None, bool]:
    """``FINISH_TURN``: the answer's event, and whether the status moved."""
    # Without an answer, its parameters are null and its parts of the statement write nothing.
    answer_parts: tuple[Any, ...] = (None,) * 5
    if answer is not None:
        placeholder = MessageCompleted(StoredMessage(0, answer, now))
        answer_parts = (answer.role, message_json(answer), placeholder.type)
        answer_parts += around_id(placeholder)
    rows = await transactions.statement(
        FINISH_TURN, conversation_id, *statuses, now, *answer_parts, event.type, event.data
    )
    answer_id, moved = rows[0]
    if answer is None:
        return None, bool(moved)
    return MessageCompleted(StoredMessage(answer_id, answer, now)), bool(moved)
