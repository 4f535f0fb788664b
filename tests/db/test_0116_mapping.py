"""Migration 0116 writes, for a row of the narrower columns, exactly the message the gateway's
reader (``chat_service.messages.legacy_message``) makes of it. Removed with that reader."""

from __future__ import annotations

import importlib
from typing import Any, NamedTuple

from hypothesis import given
from hypothesis import strategies as st

from chat_service.messages import legacy_message, message_json
from tests.adapters.text.strategies import json_values

_MIGRATION = importlib.import_module("migrations.versions.0116_whole_messages_only")
_TEXT = st.text(max_size=8)


class _Row(NamedTuple):
    role: str
    content: str | None
    tool_calls: list[dict[str, Any]] | None
    tool_call_id: str | None
    name: str | None
    is_error: bool


_CALL = st.fixed_dictionaries(
    {"id": _TEXT, "name": _TEXT, "arguments": st.dictionaries(_TEXT, json_values(_TEXT))}
)
_ROWS = st.builds(
    _Row,
    st.sampled_from(["system", "user", "assistant", "tool", "other"]),
    st.none() | _TEXT,
    st.none() | st.lists(_CALL, max_size=3),
    st.none() | _TEXT,
    st.none() | _TEXT,
    st.booleans(),
)


@given(row=_ROWS)
def test_the_backfill_writes_what_the_legacy_reader_read(row: _Row) -> None:
    assert _MIGRATION._whole(row) == message_json(legacy_message(row))
