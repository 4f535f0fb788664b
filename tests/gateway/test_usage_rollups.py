"""Usage reports come from hourly rollups written with each flush, by key, team, model and
provider, in total or per day or hour, as JSON or CSV; raw rows can go without changing them."""

from __future__ import annotations

import asyncio
import csv
import io
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import delete, insert, select

from db.engine import create_engine, session_factory
from db.models import UsageHourly, UsageRecord
from migrations.commands import upgrade
from tests.support.gateway import RunningGateway, running_gateway

MODELS = [
    {"name": "mock", "provider": "mock", "price": {"input_per_1k": 1, "output_per_1k": 2}},
    {"name": "cheap", "provider": "mock"},
]


def _chat(gateway: RunningGateway, key: str, model: str) -> httpx.Response:
    return httpx.post(
        f"{gateway.v1}/chat/completions",
        json={"model": model, "messages": [{"role": "user", "content": "hello there"}]},
        headers={"authorization": f"Bearer {key}"},
    )


def _report(client: httpx.Client, **params: str) -> list[dict[str, Any]]:
    response = client.get("/admin/usage", params=params)
    assert response.status_code == 200, response.text
    rows: list[dict[str, Any]] = response.json()["data"]
    return rows


async def _drop_raw_rows(database_url: str) -> None:
    engine = create_engine(database_url)
    try:
        async with session_factory(engine).begin() as session:
            await session.execute(delete(UsageRecord))
    finally:
        await engine.dispose()


def test_reports_by_key_team_model_and_day_from_rollups(database_url: str) -> None:
    with running_gateway(database_url, models=MODELS) as gateway:
        admin = gateway.create_key("ops", ["admin"])
        alice, bob = gateway.create_key("alice", ["user"]), gateway.create_key("bob", ["user"])
        client = httpx.Client(base_url=gateway.v1, headers={"authorization": f"Bearer {admin}"})
        assert client.patch("/admin/keys/2", json={"team": "search"}).status_code == 200
        for key, model in [(alice, "mock"), (alice, "mock"), (alice, "cheap"), (bob, "mock")]:
            assert _chat(gateway, key, model).status_code == 200
        assert _chat(gateway, bob, "absent").status_code == 404
        deadline = time.monotonic() + 10  # usage is flushed about once a second
        while sum(r["requests"] for r in _report(client)) < 5 and time.monotonic() < deadline:
            time.sleep(0.1)

        by_key_model = _report(client)
        asyncio.run(_drop_raw_rows(database_url))
        by_team = _report(client, by="team")
        by_day = _report(client, by="model", interval="day")
        by_hour = _report(client, by="provider", interval="hour")
        table = client.get("/admin/usage", params={"by": "key", "format": "csv"})
        refused = client.get("/admin/usage", params={"by": "key,colour"})
        client.close()

    rows = {(r["key_name"], r["model"]): r for r in by_key_model}
    assert rows[("alice", "mock")]["requests"] == 2
    assert rows[("alice", "mock")]["cost_usd"] > 0
    assert rows[("alice", "cheap")]["cost_usd"] == 0
    assert rows[("bob", "absent")]["errors"] == 1
    assert rows[("bob", "absent")]["unpriced_requests"] == 1
    assert rows[("alice", "mock")]["p95_latency_ms"] is not None
    # The raw rows are gone; the reports read the rollups and do not change.
    assert {r["team"]: r["requests"] for r in by_team} == {"search": 3, None: 2}
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    assert {(r["period"], r["model"]): r["requests"] for r in by_day} == {
        (today, "mock"): 3,
        (today, "cheap"): 1,
        (today, "absent"): 1,
    }
    assert sum(r["requests"] for r in by_hour) == 5
    assert by_hour[0]["period"].endswith(":00:00Z")
    assert table.headers["content-type"].startswith("text/csv")
    parsed = {r["key_name"]: r for r in csv.DictReader(io.StringIO(table.text))}
    assert parsed["alice"]["requests"] == "3"
    assert float(parsed["alice"]["cost_usd"]) == rows[("alice", "mock")]["cost_usd"]
    assert refused.status_code == 400
    assert refused.json()["error"]["param"] == "by"


async def _old_rows_then_upgrade(database_url: str) -> list[UsageHourly]:
    engine = create_engine(database_url)
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    base = {"request_id": "r", "route": "/v1/chat/completions", "status_code": 200}
    rows = [
        {**base, "api_key_id": 1, "model": "m", "provider": "openai", "created_at": when,
         "prompt_tokens": 10, "completion_tokens": 5, "latency_ms": 90, "cost_usd": 0.5},
        {**base, "api_key_id": 1, "model": "m", "provider": "openai",
         "created_at": when + timedelta(minutes=30), "prompt_tokens": 1, "completion_tokens": 1,
         "latency_ms": 700, "cost_usd": None, "status_code": 502},
    ]  # fmt: skip
    try:
        async with session_factory(engine).begin() as session:
            await session.execute(insert(UsageRecord.__table__), rows)
        await asyncio.to_thread(upgrade, database_url)
        async with session_factory(engine)() as session:
            return list(await session.scalars(select(UsageHourly)))
    finally:
        await engine.dispose()


def test_the_migration_rolls_up_rows_written_before_it(database_url: str) -> None:
    upgrade(database_url, "0011")
    [rollup] = asyncio.run(_old_rows_then_upgrade(database_url))
    assert rollup.hour == datetime(2026, 1, 2, 3, tzinfo=UTC)
    assert (rollup.requests, rollup.errors, rollup.unpriced_requests) == (2, 1, 1)
    assert (rollup.prompt_tokens, rollup.completion_tokens) == (11, 6)
    assert rollup.cost_usd == 0.5
    assert (rollup.latency_le_100, rollup.latency_le_1000, rollup.latency_ms_sum) == (1, 1, 790)
