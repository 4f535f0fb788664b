"""The audit chain's state for admins: sealed shortly after events are written, intact, and
broken where an UPDATE changed an event, in the admin API and on the audit page."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from db.engine import create_engine
from tests.support.admin_ui import signed_in_client
from tests.support.databases import fresh_database
from tests.support.tool_loop import LoopStack, loop_stack_on
from tests.support.waiting import eventually


@pytest.fixture(params=["sqlite", "postgresql"])
def stack(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LoopStack]:
    with (
        fresh_database(request.param, tmp_path) as database_url,
        loop_stack_on(database_url, {"audit_seal_seconds": 0.05}) as stack,
    ):
        yield stack


def _chain(stack: LoopStack) -> dict[str, Any]:
    with stack.client(stack.admin_key) as client:
        response = client.get("/v1/admin/audit/chain")
    assert response.status_code == 200, response.text
    state: dict[str, Any] = response.json()
    return state


def _tamper(database_url: str) -> None:
    async def update() -> None:
        engine = create_engine(database_url)
        try:
            async with engine.begin() as connection:
                await connection.execute(text("UPDATE audit_events SET action = 'x' WHERE seq = 2"))
        finally:
            await engine.dispose()

    asyncio.run(update())


def test_the_chain_is_sealed_intact_then_shown_broken_after_an_update(stack: LoopStack) -> None:
    with stack.client(stack.admin_key) as client:
        for name in ("a", "b", "c"):  # each creation is audited
            assert client.post("/v1/admin/keys", json={"name": name, "roles": ["user"]}).is_success

    eventually(lambda: _chain(stack)["sealed"] >= 3, "the sealer sealed the new events")
    intact = _chain(stack)
    assert intact["intact"] is True
    assert len(intact["head_hash"]) == 64

    _tamper(stack.gateway.database_url)
    broken = _chain(stack)
    with signed_in_client(stack.gateway.url, stack.admin_key) as client:
        page = client.get("/admin/audit").text

    assert (broken["intact"], broken["broken_at"]) == (False, 2)
    assert "changed after it was sealed" in broken["problem"]
    assert "Hash chain BROKEN at seq 2" in page
