"""The conversation store's SQL: plain text for SQLite and PostgreSQL alike (``?`` placeholders,
numbered for asyncpg by ``db.transactions``)."""

from __future__ import annotations

GET = (
    "SELECT id, api_key_id, model, bundle, roles, status, turn_started_at, created_at "
    "FROM conversations WHERE id = ?"
)
CREATE = (
    "INSERT INTO conversations (id, api_key_id, model, bundle, roles, status, created_at, "
    "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
START = (
    "UPDATE conversations SET status = ?, updated_at = ?, turn_started_at = ?, roles = ? "
    "WHERE id = ? AND status = ? "
    "RETURNING id, api_key_id, model, bundle, roles, status, turn_started_at, created_at"
)
MOVE = (
    "UPDATE conversations SET status = ?, updated_at = ? WHERE id = ? AND status = ? RETURNING id"
)
# By (moving to running, with the requester's roles): `move`'s other changes.
MOVES = {
    (False, False): MOVE,
    (True, False): (
        "UPDATE conversations SET status = ?, updated_at = ?, turn_started_at = ? "
        "WHERE id = ? AND status = ? RETURNING id"
    ),
    (False, True): (
        "UPDATE conversations SET status = ?, updated_at = ?, roles = ? "
        "WHERE id = ? AND status = ? RETURNING id"
    ),
    (True, True): (
        "UPDATE conversations SET status = ?, updated_at = ?, turn_started_at = ?, roles = ? "
        "WHERE id = ? AND status = ? RETURNING id"
    ),
}
STATUS = "SELECT status FROM conversations WHERE id = ?"
MESSAGE = (
    "INSERT INTO conversation_messages (conversation_id, role, message, is_error, created_at) "
    "VALUES (?, ?, ?, ?, ?)"
)
ADD_MESSAGE = f"{MESSAGE} RETURNING id"
# Written as a ``db.transactions.Insert``: nothing reads an event's id back.
EVENT = (
    "INSERT INTO conversation_events (conversation_id, type, data, created_at) VALUES (?, ?, ?, ?)"
)
# The rows after the cursor, and how many rows are at or before it: one statement, one
# snapshot, and always one row (the count) even when nothing is new.
HISTORY = (
    "SELECT held.n, m.id, m.message FROM (SELECT count(*) AS n FROM conversation_messages "
    "WHERE conversation_id = ? AND id <= ?) AS held "
    "LEFT JOIN conversation_messages AS m ON m.conversation_id = ? AND m.id > ? ORDER BY m.id"
)
