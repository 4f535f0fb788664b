"""A move's statement sets only the columns a move may change: names come from our code, and a
slip (or anything else) naming another column is refused before any SQL is built."""

from __future__ import annotations

import pytest

from chat_service import tool_call_sql


def test_a_move_sets_the_state_and_the_changed_columns_in_order() -> None:
    statement = tool_call_sql.move(("result", "finished_at"))
    assert statement.startswith(
        "UPDATE tool_calls SET state = ?, result = ?, finished_at = ? WHERE id = ? AND state = ?"
    )


@pytest.mark.parametrize("column", ["id", "conversation_id", "arguments", "x = 1; --"])
def test_a_move_cannot_set_identity_or_unknown_columns(column: str) -> None:
    with pytest.raises(ValueError, match="cannot set"):
        tool_call_sql.move((column,))
