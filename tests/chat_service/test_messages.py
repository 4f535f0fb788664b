"""Messages survive the store whole: every canonical type, every field, on SQLite and PostgreSQL.

A server-tools model sees images and an Anthropic model gets its signed thinking back because of
this; rows written before the whole message was stored still load from their narrow columns.
"""

from __future__ import annotations

from typing import TypeVar

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from chat_service.messages import MESSAGES as MESSAGE_JSON
from chat_service.messages import message_json
from chat_service.store import ConversationStore
from db.models import ConversationMessage
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
from tests.adapters.text.strategies import json_values
from tests.support.store import with_store

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


def test_rows_from_before_whole_messages_load_from_their_columns(migrated: str) -> None:
    async def legacy(
        store: ConversationStore, sessions: async_sessionmaker[AsyncSession]
    ) -> list[Message]:
        conversation = await store.create(1, "model", ["user"])
        rows = [
            ConversationMessage(role="user", content="hi"),
            ConversationMessage(
                role="assistant",
                content=None,
                tool_calls=[{"id": "call_1", "name": "get_time", "arguments": {"tz": "UTC"}}],
            ),
            ConversationMessage(
                role="tool", content="noon", tool_call_id="call_1", name="get_time", is_error=True
            ),
        ]
        async with sessions.begin() as session:
            for row in rows:
                row.conversation_id = conversation.id
                session.add(row)
        whole = [stored.message for stored in await store.messages(conversation.id)]
        assert list(await store.history(conversation.id)) == whole
        return whole

    assert with_store(migrated, legacy) == [
        UserMessage("hi"),
        AssistantMessage(tool_calls=(ToolCall("call_1", "get_time", {"tz": "UTC"}),)),
        ToolResultMessage("call_1", "noon", name="get_time", is_error=True),
    ]


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
