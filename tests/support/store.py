"""The real conversation store on a test database, from synchronous tests."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from chat_service.store import ConversationStore
from db.engine import create_engine, session_factory

T = TypeVar("T")
Use = Callable[[ConversationStore, async_sessionmaker[AsyncSession]], Awaitable[T]]


def with_store(database_url: str, use: Use[T]) -> T:
    """Runs ``use`` with the store (and its sessions) on its own event loop and engine."""

    async def go() -> T:
        engine = create_engine(database_url)
        try:
            sessions = session_factory(engine)
            return await use(ConversationStore(sessions), sessions)
        finally:
            await engine.dispose()

    return asyncio.run(go())
