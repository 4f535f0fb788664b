"""The tool-call store's SQL: plain text for SQLite and PostgreSQL alike (``?`` placeholders,
numbered for asyncpg by ``db.transactions``).

Statements are put together from constants and column names of our own (checked against
``SETTABLE``), never from input: hence the ``S608`` exemptions below."""

from __future__ import annotations

from functools import cache

from db.transactions import insert_sql

# A call's columns as ``ToolCallView`` reads them (``tool_calls.view_of``), in this order.
VIEW_COLUMNS = (
    "id, conversation_id, call_id, round, tool_name, server, arguments, state, "
    "requested_by_key_id, expires_at, decided_by_key_id, decision_reason, policy_reason, result, "
    "result_is_error, created_at, definition_hash, decided_at, started_at, finished_at, "
    "approvals_required, approvals"
)
SELECT = f"SELECT {VIEW_COLUMNS} FROM tool_calls"  # noqa: S608
GET = f"{SELECT} WHERE id = ?"
FOR_CONVERSATION = f"{SELECT} WHERE conversation_id = ? ORDER BY created_at"
IN_STATES = f"{SELECT} WHERE state IN ({{marks}}) ORDER BY created_at LIMIT ?"
COUNT = "SELECT count(*) FROM tool_calls WHERE state = ?"
# The calls a decision was asked for and given (approved, rejected, expired, or denied at the
# approval), whatever state they moved on to, newest decision first.
DECIDED = f"{SELECT} WHERE decided_at IS NOT NULL ORDER BY decided_at DESC LIMIT ?"
AUDIT = (
    "INSERT INTO audit_events (created_at, actor_key_id, action, conversation_id, tool_call_id, "
    "tool_name, detail) VALUES (?, ?, ?, ?, ?, ?, ?)"
)

# What a move may change besides the state (names from our code, never from input: checked).
SETTABLE = frozenset(
    {
        "server",
        "definition_hash",
        "expires_at",
        "decided_by_key_id",
        "decided_at",
        "decision_reason",
        "approvals_required",
        "approvals",
        "approval_count",
        "policy_reason",
        "result",
        "result_is_error",
        "started_at",
        "finished_at",
    }
)


# What a proposal sets besides what its moves may.
PROPOSED = frozenset(
    {
        "id",
        "conversation_id",
        "call_id",
        "round",
        "tool_name",
        "arguments",
        "arguments_hash",
        "state",
        "requested_by_key_id",
        "approval_count",
        "result_is_error",
        "created_at",
    }
)


@cache
def propose(columns: tuple[str, ...]) -> str:
    """The insert of a proposed call (as its moves leave it), setting ``columns``, in order: a
    ``db.transactions.Insert``, nothing read back."""
    unknown = set(columns) - PROPOSED - SETTABLE
    if unknown:
        raise ValueError(f"a proposal cannot set {sorted(unknown)}")
    return insert_sql("tool_calls", columns, 1)


@cache
def move(changed: tuple[str, ...]) -> str:
    """The compare-and-set on the state, setting ``changed`` too; parameters: the new state,
    each changed value, then the id and the expected state."""
    return _update(changed, "id = ? AND state = ?")


@cache
def add_approval(changed: tuple[str, ...]) -> str:
    """As ``move``, also comparing the approval count; parameters end with the id, the
    expected state and the expected count."""
    return _update(changed, "id = ? AND state = ? AND approval_count = ?")


def _update(changed: tuple[str, ...], condition: str) -> str:
    unknown = set(changed) - SETTABLE
    if unknown:
        raise ValueError(f"a tool-call move cannot set {sorted(unknown)}")
    sets = "".join(f", {name} = ?" for name in changed)
    return f"UPDATE tool_calls SET state = ?{sets} WHERE {condition} RETURNING {VIEW_COLUMNS}"  # noqa: S608


@cache
def in_states(count: int) -> str:
    return IN_STATES.format(marks=", ".join("?" * count))
