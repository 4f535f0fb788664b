"""A turn reads only the messages it has not seen, and still sees every message: those another
gateway appended, and one committed behind the cursor (out of id order)."""

from __future__ import annotations

import asyncio
from contextlib import ExitStack
from typing import Any

import httpx
from sqlalchemy import insert

from chat_service.messages import message_json
from chat_service.store import ConversationStore
from db.engine import create_engine, session_factory
from db.models import ConversationMessage
from llm_service.types import Message, UserMessage
from tests.support.fake_openai import FakeOpenAI
from tests.support.gateway import running_gateway


def _texts(request: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in request["messages"]]


def test_a_turn_sees_what_another_gateway_appended(
    database_url: str, fake_openai: tuple[FakeOpenAI, str]
) -> None:
    fake, fake_url = fake_openai
    models = [{"name": "gpt", "provider": "openai", "base_url": fake_url, "api_key_env": "K"}]
    with ExitStack() as stack:
        first, second = (
            stack.enter_context(running_gateway(database_url, environ={"K": "k"}, models=models))
            for _ in range(2)
        )
        key = first.create_key("history", ["user"])
        headers = {"authorization": f"Bearer {key}"}
        created = httpx.post(f"{first.v1}/conversations", json={"model": "gpt"}, headers=headers)
        path = f"/conversations/{created.json()['id']}/messages"

        def turn(gateway: Any, text: str) -> None:
            answer = httpx.post(f"{gateway.v1}{path}", json={"content": text}, headers=headers)
            assert answer.json()["status"] == "completed"

        turn(first, "one")  # the first gateway now holds the history in memory
        turn(second, "two")
        turn(first, "three")  # must read the second gateway's turn, not only its own

    assert _texts(fake.requests[-1]) == [
        ("user", "one"),
        ("assistant", "fake says: one"),
        ("user", "two"),
        ("assistant", "fake says: two"),
        ("user", "three"),
    ]


async def _behind_the_cursor(database_url: str) -> tuple[list[str], list[str], list[str]]:
    engine = create_engine(database_url)
    sessions = session_factory(engine)

    async def write(conversation_id: str, text: str, row_id: int | None = None) -> None:
        values: dict[str, Any] = {
            "conversation_id": conversation_id,
            "role": "user",
            "message": message_json(UserMessage(text)),
        }
        if row_id is not None:
            values["id"] = row_id
        async with sessions.begin() as session:
            await session.execute(insert(ConversationMessage).values(**values))

    def contents(history: Any) -> list[str]:
        messages: list[Message] = list(history)
        return [str(getattr(m, "content", "")) for m in messages]

    try:
        store = ConversationStore(sessions)
        conversation = await store.create(1, "mock", ["user"])
        await write(conversation.id, "a")
        await write(conversation.id, "c", row_id=1000)
        seen = contents(await store.history(conversation.id))
        # Another writer's row took a lower id but committed later (PostgreSQL sequences).
        await write(conversation.id, "b", row_id=500)
        await write(conversation.id, "d", row_id=2000)
        after = contents(await store.history(conversation.id))
        whole = contents(m.message for m in await store.messages(conversation.id))
        return seen, after, whole
    finally:
        await engine.dispose()


def test_a_row_committed_behind_the_cursor_is_not_missed(migrated: str) -> None:
    seen, after, whole = asyncio.run(_behind_the_cursor(migrated))
    assert seen == ["a", "c"]
    assert after == ["a", "b", "c", "d"] == whole
