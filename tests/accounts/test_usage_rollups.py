"""Usage reports come from hourly rollups written with each flush, by key, team, model and
provider, in total or per day or hour, as JSON or CSV; raw rows can go without changing them."""

from __future__ import annotations

import asyncio
import csv
import io
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import delete, insert, select

from accounts.usage_rollup import rollup_statements, rollups
from admin.api.usage import UsageQuery, usage_report
from db.engine import create_engine, session_factory
from db.transactions import Operation, Statement, Transactions
from db.usage_models import UsageDaily, UsageHourly, UsageRecord
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
    # Refused before any provider: it costs nothing, rather than counting as unpriced.
    assert rows[("bob", "absent")]["unpriced_requests"] == 0
    assert rows[("bob", "absent")]["cost_usd"] == 0
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


async def _old_rows_then_upgrade(database_url: str) -> tuple[list[UsageHourly], list[UsageDaily]]:
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
            hourly = list(await session.scalars(select(UsageHourly)))
            return hourly, list(await session.scalars(select(UsageDaily)))
    finally:
        await engine.dispose()


def test_the_migration_rolls_up_rows_written_before_it(database_url: str) -> None:
    upgrade(database_url, "0011")
    [rollup], [day] = asyncio.run(_old_rows_then_upgrade(database_url))
    assert rollup.hour == datetime(2026, 1, 2, 3, tzinfo=UTC)
    assert (rollup.requests, rollup.errors, rollup.unpriced_requests) == (2, 1, 1)
    assert (rollup.prompt_tokens, rollup.completion_tokens) == (11, 6)
    assert rollup.cost_usd == 0.5
    assert (rollup.latency_le_100, rollup.latency_le_1000, rollup.latency_ms_sum) == (1, 1, 790)
    assert day.day == datetime(2026, 1, 2, tzinfo=UTC)
    assert (day.requests, day.errors, day.cost_usd, day.latency_ms_sum) == (2, 1, 0.5, 790)


def _raw(created_at: datetime, model: str, tokens: int) -> dict[str, Any]:
    return {
        "created_at": created_at, "api_key_id": 1, "team": None, "model": model,
        "provider": "openai", "prompt_tokens": tokens, "completion_tokens": 1, "cached_tokens": 0,
        "reasoning_tokens": 0, "cost_usd": tokens / 100, "status_code": 200, "latency_ms": 50,
    }  # fmt: skip


def _statements(statements: Iterator[Statement]) -> Operation[None]:
    yield from statements


async def _write_then_report(
    database_url: str, raw: list[dict[str, Any]], queries: list[UsageQuery]
) -> list[list[dict[str, Any]]]:
    await asyncio.to_thread(upgrade, database_url)
    engine = create_engine(database_url)
    sessions = session_factory(engine)
    try:
        transactions = Transactions(engine)
        for row in raw:  # one flush per row: the upserts must add up across flushes too
            await transactions.run(_statements(rollup_statements(rollups([row]))))
        return [await usage_report(sessions, query) for query in queries]
    finally:
        await engine.dispose()


def test_whole_days_come_from_the_daily_rollups_and_the_first_partial_day_from_hours(
    database_url: str,
) -> None:
    now = datetime.now(UTC).replace(minute=30, second=0, microsecond=0)
    since = now - timedelta(days=3)
    raw = [
        _raw(since - timedelta(hours=2), "m", 1000),  # before the window, same day: left out
        _raw(since + timedelta(minutes=5), "m", 1),  # in the window's first (partial) day
        _raw(since + timedelta(hours=30), "m", 10),  # a whole day
        _raw(since + timedelta(hours=31), "n", 20),
        _raw(now, "m", 100),  # today
        _raw(now, "m", 100),
    ]
    queries = [
        UsageQuery(since, ("model",)),
        UsageQuery(since, ("model",), "day"),
        UsageQuery(since, ("model",), "hour"),
    ]
    total, per_day, per_hour = asyncio.run(_write_then_report(database_url, raw, queries))

    assert {r["model"]: r["prompt_tokens"] for r in total} == {"m": 211, "n": 20}
    assert {r["model"]: r["requests"] for r in total} == {"m": 4, "n": 1}
    in_window = [r for r in raw if r["created_at"] >= since.replace(minute=0)]
    expected_days: dict[tuple[str, str], int] = {}
    for row in in_window:
        key = (row["created_at"].strftime("%Y-%m-%d"), row["model"])
        expected_days[key] = expected_days.get(key, 0) + row["prompt_tokens"]
    assert {(r["period"], r["model"]): r["prompt_tokens"] for r in per_day} == expected_days
    assert sum(r["prompt_tokens"] for r in per_hour) == 231
    assert total[0]["cost_usd"] == 2.11
