"""Messages survive the store whole: every canonical type, every field, on SQLite and PostgreSQL.

A server-tools model sees images and an Anthropic model gets its signed thinking back because of
this; rows written before the whole message was stored get theirs from migration 0116.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import JSON, DateTime, column, insert, null, select, table
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from chat_service.messages import MESSAGES as MESSAGE_JSON
from chat_service.messages import message_json
from chat_service.store import ConversationStore
from llm_service.types import (
    AssistantMessage,
    ImagePart,
    Message,
    SystemMessage,
    TextPart,
    Thinking,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from migrations.commands import downgrade, upgrade
from tests.adapters.text.strategies import json_values
from tests.support.store import Use, with_store

T = TypeVar("T")

_TEXT = st.text(max_size=16)
_MAYBE_TEXT = st.none() | _TEXT
_PARTS = st.one_of(
    st.builds(TextPart, _TEXT),
    st.builds(ImagePart, _TEXT, st.none() | st.sampled_from(["low", "high", "auto"])),
)
_CALLS = st.builds(
    ToolCall, _TEXT, _TEXT, st.dictionaries(_TEXT, json_values(_TEXT), max_size=3), _MAYBE_TEXT
)
_THINKING = st.builds(Thinking, _TEXT, _MAYBE_TEXT, st.booleans())
MESSAGES = st.one_of(
    st.builds(SystemMessage, _TEXT),
    st.builds(UserMessage, _TEXT | st.lists(_PARTS, max_size=3).map(tuple)),
    st.builds(
        AssistantMessage,
        _MAYBE_TEXT,
        st.lists(_CALLS, max_size=3).map(tuple),
        st.lists(_THINKING, max_size=3).map(tuple),
    ),
    st.builds(
        ToolResultMessage,
        _TEXT,
        _TEXT | st.lists(_PARTS, max_size=3).map(tuple),
        _MAYBE_TEXT,
        st.booleans(),
    ),
)

# Every type, every field set to something other than its default.
EVERY_FIELD: list[Message] = [
    SystemMessage("Be brief."),
    UserMessage((TextPart("What is this?"), ImagePart("data:image/png;base64,iVBORw0K", "high"))),
    AssistantMessage(
        content="Let me look.",
        tool_calls=(
            ToolCall("toolu_1", "lookup", {"q": ["a", 1, None, {"x": 1.5}]}),
            ToolCall("toolu_2", "broken", {}, raw_arguments='{"q": '),
        ),
        thinking=(Thinking("plan", signature="sig-1"), Thinking("opaque", redacted=True)),
    ),
    ToolResultMessage("toolu_1", "found", name="lookup", is_error=True),
    ToolResultMessage("toolu_2", (TextPart("chart:"), ImagePart("https://x.test/c.png", "low"))),
    UserMessage("Thanks"),
]


async def round_trip(store: ConversationStore, messages: list[Message]) -> list[Message]:
    conversation = await store.create(1, "model", ["user"])
    for message in messages:
        await store.append(conversation.id, message)
    whole = [stored.message for stored in await store.messages(conversation.id)]
    # The turn's history reads the same rows on the driver's own connection.
    assert list(await store.history(conversation.id)) == whole
    return whole


def test_every_message_type_and_field_round_trips(migrated: str) -> None:
    assert with_store(migrated, lambda store, _: round_trip(store, EVERY_FIELD)) == EVERY_FIELD


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(messages=st.lists(MESSAGES, min_size=1, max_size=6))
def test_any_conversation_round_trips(migrated: str, messages: list[Message]) -> None:
    assert with_store(migrated, lambda store, _: round_trip(store, messages)) == messages


# Rows as the gateway wrote them before migration 0008 (``message`` SQL NULL), then one whole.
_ROWS = table(
    "conversation_messages",
    column("id"),
    column("conversation_id"),
    column("role"),
    column("message", JSON),
    column("content"),
    column("tool_calls", JSON),
    column("tool_call_id"),
    column("name"),
    column("is_error"),
    column("created_at", DateTime(timezone=True)),
)
_CALL = {"id": "call_1", "name": "get_time", "arguments": {"tz": "UTC", "at": [1, None]}}
_NARROW: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "What time is it?"},
    {"role": "assistant", "content": None, "tool_calls": [_CALL]},
    {"role": "tool", "content": "clock offline", "tool_call_id": "call_1", "name": "get_time",
     "is_error": True},
    {"role": "assistant", "content": "Unknown."},
    {"role": "user", "content": None},
]  # fmt: skip
_WHOLE = AssistantMessage("Noon.", thinking=(Thinking("look", signature="sig-1"),))
# What the gateway's reader of the narrow columns made of those rows until 0116 (checked
# against it before it went), then the whole one.
_CANONICAL: list[Message] = [
    SystemMessage("Be brief."),
    UserMessage("What time is it?"),
    AssistantMessage(tool_calls=(ToolCall("call_1", "get_time", {"tz": "UTC", "at": [1, None]}),)),
    ToolResultMessage("call_1", "clock offline", name="get_time", is_error=True),
    AssistantMessage("Unknown."),
    UserMessage(""),
    _WHOLE,
]


async def _write_old_rows(
    store: ConversationStore, sessions: async_sessionmaker[AsyncSession]
) -> str:
    filler, conversation = [await store.create(1, "model", ["user"]) for _ in range(2)]
    now = datetime.now(UTC)
    row = {"conversation_id": conversation.id, "is_error": False, "created_at": now}
    # More rows than the migration writes in one batch, before the conversation's own.
    many = [{**row, "conversation_id": filler.id, "role": "user", "content": "x"}] * 1500
    async with sessions.begin() as session:
        await session.execute(insert(_ROWS), many)
        for narrow in _NARROW:  # one at a time: ids in this order
            await session.execute(insert(_ROWS).values(**{**row, **narrow}))
        whole = {**row, "role": "assistant", "message": message_json(_WHOLE)}
        await session.execute(insert(_ROWS).values(**whole))
    return conversation.id


def _read_every_way(conversation_id: str) -> Use[tuple[list[Message], list[Message]]]:
    """The API's messages (the ORM), and a turn's history (the driver's own statements)."""

    async def read(store: ConversationStore, _: object) -> tuple[list[Message], list[Message]]:
        stored = [stored.message for stored in await store.messages(conversation_id)]
        return stored, list(await store.history(conversation_id))

    return read


def test_0116_gives_rows_from_before_whole_messages_the_messages_they_read_as(
    database_url: str,
) -> None:
    upgrade(database_url, "0115")
    conversation_id = with_store(database_url, _write_old_rows)
    upgrade(database_url, "0116")
    assert with_store(database_url, _read_every_way(conversation_id)) == (_CANONICAL, _CANONICAL)

    async def turn(store: ConversationStore, _: object) -> list[Message]:
        # On PostgreSQL a turn begins in one statement, which reads the history too.
        assert await store.begin_turn(conversation_id, ["user"], UserMessage("And now?"))
        return list(await store.history(conversation_id))

    assert with_store(database_url, turn) == [*_CANONICAL, UserMessage("And now?")]

    async def add_null(_: ConversationStore, sessions: async_sessionmaker[AsyncSession]) -> None:
        now = datetime.now(UTC)
        values = {"conversation_id": conversation_id, "role": "user", "created_at": now}
        async with sessions.begin() as session:
            await session.execute(insert(_ROWS).values(**values, is_error=False, message=null()))

    async def messages(_: ConversationStore, sessions: async_sessionmaker[AsyncSession]) -> Any:
        async with sessions() as session:
            mine = _ROWS.c.conversation_id == conversation_id
            return list(await session.scalars(select(_ROWS.c.message).where(mine).order_by("id")))

    with pytest.raises(IntegrityError, match=r'conversation_messages\.message|column "message"'):
        with_store(database_url, add_null)
    kept = with_store(database_url, messages)
    downgrade(database_url, "0115")  # the column takes nulls again, and the messages stay
    with_store(database_url, add_null)
    assert with_store(database_url, messages) == [*kept, None]
    assert kept == [message_json(m) for m in [*_CANONICAL, UserMessage("And now?")]]


def test_a_result_stored_as_text_before_results_held_parts_still_reads() -> None:
    """No migration: the text shape is one of the two a result's content takes."""
    old = {
        "role": "tool",
        "tool_call_id": "toolu_1",
        "content": "found",
        "name": "lookup",
        "is_error": True,
        "cache_control": None,
    }
    assert MESSAGE_JSON.validate_python(old) == EVERY_FIELD[3]


def test_a_result_with_parts_is_stored_part_by_part() -> None:
    assert message_json(EVERY_FIELD[4])["content"] == [
        {"text": "chart:", "type": "text", "cache_control": None},
        {"url": "https://x.test/c.png", "detail": "low", "type": "image", "cache_control": None},
    ]


def test_the_api_shape_of_a_message_keeps_its_fields_and_gains_the_rest() -> None:
    assistant, result = EVERY_FIELD[2], EVERY_FIELD[3]

    assert message_json(assistant) == {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {
                "id": "toolu_1",
                "name": "lookup",
                "arguments": {"q": ["a", 1, None, {"x": 1.5}]},
                "raw_arguments": None,
                "cache_control": None,
            },
            {
                "id": "toolu_2",
                "name": "broken",
                "arguments": {},
                "raw_arguments": '{"q": ',
                "cache_control": None,
            },
        ],
        "thinking": [
            {"text": "plan", "signature": "sig-1", "redacted": False, "model": None},
            {"text": "opaque", "signature": None, "redacted": True, "model": None},
        ],
        "cache_control": None,
    }
    assert message_json(result) == {
        "role": "tool",
        "tool_call_id": "toolu_1",
        "content": "found",
        "name": "lookup",
        "is_error": True,
        "cache_control": None,
    }
