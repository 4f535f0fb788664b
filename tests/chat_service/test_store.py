"""Beginning a turn answers for a missing, busy or foreign conversation as a separate read did,
and its history read (in the same transaction) still finds a row committed behind the cursor;
on PostgreSQL, where it is one statement with one snapshot, also a turn that another replica
ended while the statement waited for the conversation's row."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any

import asyncpg
import httpx
from sqlalchemy import delete, insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from chat_service.events import TurnFinished, TurnStatus
from chat_service.messages import message_json
from chat_service.store import ConversationStatus, ConversationStore
from db.models import Conversation, ConversationMessage
from llm_service.types import AssistantMessage, SystemMessage, UserMessage
from migrations.commands import upgrade
from tests.support.databases import postgres_database
from tests.support.gateway import running_gateway
from tests.support.store import with_store

MOCK = [{"name": "mock", "provider": "mock"}]


def _error(response: httpx.Response) -> tuple[int, str, str, str]:
    error = response.json()["error"]
    return response.status_code, error["type"], error["code"], error["message"]


def test_missing_foreign_busy_and_deleted_conversations(database_url: str) -> None:
    with running_gateway(database_url, models=MOCK) as gateway:
        owner = {"authorization": f"Bearer {gateway.create_key('owner', ['user'])}"}
        other = {"authorization": f"Bearer {gateway.create_key('other', ['user'])}"}
        created = httpx.post(f"{gateway.v1}/conversations", json={"model": "mock"}, headers=owner)
        conversation = created.json()["id"]

        def send(conversation_id: str, headers: dict[str, str]) -> httpx.Response:
            url = f"{gateway.v1}/conversations/{conversation_id}/messages"
            return httpx.post(url, json={"content": "hi"}, headers=headers, timeout=30)

        missing = str(uuid.uuid4())
        not_found = ("not_found_error", "conversation_not_found")
        assert _error(send(missing, owner)) == (404, *not_found, f"No conversation `{missing}`.")
        foreign = send(conversation, other)
        assert _error(foreign) == (404, *not_found, f"No conversation `{conversation}`.")
        assert send(conversation, owner).json()["status"] == "completed"

        async def occupy(store: ConversationStore, _: Any) -> bool:
            return await store.move(
                conversation, ConversationStatus.IDLE, ConversationStatus.RUNNING
            )

        assert with_store(database_url, occupy)
        busy = _error(send(conversation, owner))
        assert busy[:3] == (409, "conflict", "turn_in_progress")

        async def remove(_: ConversationStore, sessions: async_sessionmaker[AsyncSession]) -> None:
            async with sessions.begin() as session:
                await session.execute(delete(ConversationMessage))
                await session.execute(delete(Conversation).where(Conversation.id == conversation))

        with_store(database_url, remove)
        # The gateway knew the conversation's owner; the turn itself finds it gone.
        gone = send(conversation, owner)
        assert _error(gone) == (404, *not_found, f"No conversation `{conversation}`.")


def test_a_turn_begins_with_a_row_committed_behind_the_cursor(migrated: str) -> None:
    async def scenario(
        store: ConversationStore, sessions: async_sessionmaker[AsyncSession]
    ) -> tuple[list[str], list[str]]:
        # Rows of another conversation take the low ids, then free them for the row below.
        filler = await store.create(1, "mock", ["user"])
        for text in "abcde":
            await store.append(filler.id, UserMessage(text))
        conversation = await store.create(1, "mock", ["user"])
        assert await store.begin_turn(conversation.id, ["user"], UserMessage("one"))
        assert [_text(m) for m in await store.history(conversation.id)] == ["one"]
        done = TurnFinished(TurnStatus.COMPLETED)
        idle, running = ConversationStatus.IDLE, ConversationStatus.RUNNING
        answer = AssistantMessage("answer")
        completed, moved = await store.finish_turn(conversation.id, done, running, idle, answer)
        assert moved
        assert completed is not None
        assert completed.message.message == answer
        async with sessions.begin() as session:
            await session.execute(
                delete(ConversationMessage).where(ConversationMessage.conversation_id == filler.id)
            )
            # Another writer's row took a lower id but committed later (PostgreSQL sequences).
            behind = message_json(UserMessage("behind"))
            values = {"id": 3, "conversation_id": conversation.id, "role": "user"}
            await session.execute(insert(ConversationMessage).values(**values, message=behind))
        assert await store.begin_turn(conversation.id, ["user"], UserMessage("two"))
        seen = [_text(m) for m in await store.history(conversation.id)]
        whole = [_text(m.message) for m in await store.messages(conversation.id)]
        return seen, whole

    seen, whole = with_store(migrated, scenario)
    assert seen == ["behind", "one", "answer", "two"] == whole


def _text(message: Any) -> str:
    return str(message.content)


def test_a_turn_begun_as_another_replica_ends_one_sees_its_answer() -> None:
    with postgres_database() as url:
        upgrade(url)
        plain = url.replace("postgresql+asyncpg://", "postgresql://", 1)

        async def scenario(
            store: ConversationStore, _: async_sessionmaker[AsyncSession]
        ) -> tuple[list[str], list[str]]:
            return await _begin_while_another_replica_ends_its_turn(store, plain)

        seen, whole = with_store(url, scenario)
    assert seen == ["one", "answer", "two", "other answer", "three"] == whole


async def _begin_while_another_replica_ends_its_turn(
    store: ConversationStore, url: str
) -> tuple[list[str], list[str]]:
    idle, running = ConversationStatus.IDLE, ConversationStatus.RUNNING
    done = TurnFinished(TurnStatus.COMPLETED)
    conversation = (await store.create(1, "mock", ["user"])).id
    assert await store.begin_turn(conversation, ["user"], UserMessage("one"))
    await store.finish_turn(conversation, done, running, idle, AssistantMessage("answer"))
    await store.history(conversation)  # this replica now holds the history up to "answer"
    # Another replica's whole turn, its messages and its row's change, not committed yet: the
    # statement below takes its snapshot without them, finds the row idle, and waits for it.
    other = await asyncpg.connect(url)
    try:
        turn = other.transaction()
        await turn.start()
        add = (
            "INSERT INTO conversation_messages (conversation_id, role, message, is_error, "
            "created_at) VALUES ($1, $2, $3::json, false, now())"
        )
        for message in (UserMessage("two"), AssistantMessage("other answer")):
            await other.execute(add, conversation, message.role, json.dumps(message_json(message)))
        touch = "UPDATE conversations SET updated_at = now() WHERE id = $1"
        await other.execute(touch, conversation)
        three = UserMessage("three")
        begin = asyncio.ensure_future(store.begin_turn(conversation, ["user"], three))
        await _until_waiting_for_a_lock(other)
        await turn.commit()
        assert await begin
    finally:
        await other.close()
    history = await store.history(conversation)
    messages = await store.messages(conversation)
    return [_text(m) for m in history], [_text(m.message) for m in messages]


async def _until_waiting_for_a_lock(connection: asyncpg.Connection) -> None:
    deadline = time.monotonic() + 20
    query = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
    while not await connection.fetchval(query):  # each check is a query: nothing spins idle
        assert time.monotonic() < deadline, "the turn's beginning never waited for the row"


def test_a_turn_stores_its_messages_and_events_exactly(migrated: str) -> None:
    # Text that looks like the event's own JSON, quotes, a NUL and non-ASCII: on PostgreSQL the
    # event's data is sent in halves around the message's id (chat_service.store_postgres).
    tricky = '{"message": {"id": 0, "x": "\\u0000"} \x00 "quoted" \u00e9\u4e2d'

    async def scenario(
        store: ConversationStore, _: async_sessionmaker[AsyncSession]
    ) -> tuple[list[Any], list[Any]]:
        conversation = (await store.create(1, "mock", ["user"])).id
        begun = await store.begin_turn(conversation, ["user"], UserMessage(tricky))
        assert begun is not None
        done = TurnFinished(TurnStatus.COMPLETED)
        running, idle = ConversationStatus.RUNNING, ConversationStatus.IDLE
        answer = AssistantMessage(tricky[::-1])
        finished, moved = await store.finish_turn(conversation, done, running, idle, answer)
        assert moved
        assert finished is not None
        told = [begun[1], finished, done]
        stored = [event for _, event in await store.events(conversation, 0)]
        messages = [m.message for m in await store.messages(conversation)]
        assert messages == [UserMessage(tricky), answer]
        return told, stored

    told, stored = with_store(migrated, scenario)
    assert [event.data for event in stored] == [event.data for event in told]


def test_a_conversation_is_created_with_its_system_prompt(migrated: str) -> None:
    async def scenario(
        store: ConversationStore, _: async_sessionmaker[AsyncSession]
    ) -> tuple[list[Any], list[Any], Any]:
        conversation = await store.create(7, "mock", ["user"], "Be brief.", bundle="desk")
        stored = [m.message for m in await store.messages(conversation.id)]
        history = list(await store.history(conversation.id))
        return stored, history, await store.get(conversation.id)

    stored, history, info = with_store(migrated, scenario)
    assert stored == history == [SystemMessage("Be brief.")]
    assert (info.api_key_id, info.model, info.bundle, info.roles) == (7, "mock", "desk", {"user"})
    assert info.status is ConversationStatus.IDLE
