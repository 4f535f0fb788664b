"""Key lookups under load: concurrent requests for an uncached key share one database query.
The state governance decides on: an expired key is as inactive as a revoked one."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from sqlalchemy import event

from accounts.keys import KeyStore
from db.base import utcnow
from db.engine import create_engine, session_factory
from migrations.commands import upgrade


async def test_concurrent_lookups_of_one_key_make_one_query(sqlite_url: str) -> None:
    await asyncio.to_thread(upgrade, sqlite_url)
    engine = create_engine(sqlite_url)
    store = KeyStore(session_factory(engine), cache_seconds=60)
    key, info = await store.create("team-a", ["user"])
    queries: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            queries.append(statement)

    event.listen(engine.sync_engine, "before_cursor_execute", count)
    try:
        principals = await asyncio.gather(*(store.authenticate(key) for _ in range(20)))
        again = await store.authenticate(key)
    finally:
        await engine.dispose()

    assert {p.key_id for p in principals if p is not None} == {info.id}
    assert None not in principals
    assert again == principals[0]
    assert len(queries) == 1


async def test_an_expired_key_is_inactive_for_decisions(sqlite_url: str) -> None:
    await asyncio.to_thread(upgrade, sqlite_url)
    engine = create_engine(sqlite_url)
    store = KeyStore(session_factory(engine), cache_seconds=60)
    _, info = await store.create("team-a", ["user"], owner="ana")
    try:
        before = await store.key_state(info.id)
        past = utcnow() - timedelta(minutes=1)
        await store.change(info.id, {"expires_at": past}, actor_key_id=None)
        after = await store.key_state(info.id)
    finally:
        await engine.dispose()

    assert before is not None
    assert before.active
    assert after is not None
    assert not after.active
    assert after.roles == frozenset({"user"})
    assert after.owner == "ana"
