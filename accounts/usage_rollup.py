"""Usage rollups, summed from each flushed batch and added to ``usage_hourly`` and
``usage_daily`` with upserts in the batch's own transaction, so they always agree with the raw rows.

Groups are written in a fixed order, so replicas flushing at once lock rows in the same order and
cannot deadlock on PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from functools import cache
from typing import Any

from db.transactions import Statement, insert_sql
from db.usage_models import LATENCY_BUCKETS_MS, LATENCY_COLUMNS

DIMENSIONS = ("api_key_id", "team", "model", "provider")
SUMMED = (
    "requests",
    "errors",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "reasoning_tokens",
    "cost_usd",
    "unpriced_requests",
    "latency_ms_sum",
    *LATENCY_COLUMNS,
)
GroupKey = tuple[datetime, int, str, str, str]


def latency_column(latency_ms: int) -> str:
    for bound, column in zip(LATENCY_BUCKETS_MS, LATENCY_COLUMNS, strict=False):
        if latency_ms <= bound:
            return column
    return LATENCY_COLUMNS[-1]


def rollups(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Raw usage rows (as inserted) summed per hour, key, team, model and provider."""
    groups: dict[GroupKey, dict[str, Any]] = {}
    for row in rows:
        created: datetime = row["created_at"]
        key: GroupKey = (
            created.replace(minute=0, second=0, microsecond=0),
            row["api_key_id"] or 0,
            row["team"] or "",
            row["model"],
            row["provider"] or "",
        )
        group = groups.get(key)
        if group is None:
            group = groups[key] = {
                "hour": key[0],
                **dict(zip(DIMENSIONS, key[1:], strict=True)),
                **dict.fromkeys(SUMMED, 0),
            }
        cost = row["cost_usd"]
        group["requests"] += 1
        group["errors"] += row["status_code"] >= 400
        group["prompt_tokens"] += row["prompt_tokens"]
        group["completion_tokens"] += row["completion_tokens"]
        group["cached_tokens"] += row["cached_tokens"]
        group["reasoning_tokens"] += row["reasoning_tokens"]
        group["cost_usd"] += cost or 0.0
        group["unpriced_requests"] += cost is None
        group["latency_ms_sum"] += row["latency_ms"]
        group[latency_column(row["latency_ms"])] += 1
    return [groups[key] for key in sorted(groups)]


def daily(hourly: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Hourly rollups (from ``rollups``) summed per day, in the same fixed order."""
    groups: dict[GroupKey, dict[str, Any]] = {}
    for row in hourly:
        day = row["hour"].replace(hour=0)
        key: GroupKey = (day, row["api_key_id"], row["team"], row["model"], row["provider"])
        group = groups.get(key)
        if group is None:
            groups[key] = {"day": day, **{name: row[name] for name in (*DIMENSIONS, *SUMMED)}}
        else:
            for name in SUMMED:
                group[name] += row[name]
    return [groups[key] for key in sorted(groups)]


def rollup_statements(hourly: Sequence[Mapping[str, Any]]) -> Iterator[Statement]:
    """The upserts adding a batch's hourly rollups (from ``rollups``) and their daily sums:
    hours first, each table in one statement, its groups in sorted order."""
    if not hourly:
        return
    for table, period, rows in (
        ("usage_hourly", "hour", hourly),
        ("usage_daily", "day", daily(hourly)),
    ):
        columns = (period, *DIMENSIONS, *SUMMED)
        parameters = tuple(row[name] for row in rows for name in columns)
        yield _upsert(table, period, len(rows)), parameters


@cache
def _upsert(table: str, period: str, count: int) -> str:
    # ON CONFLICT ... DO UPDATE reads the same on SQLite (3.24 and later) and PostgreSQL.
    added = ", ".join(f"{name} = {table}.{name} + excluded.{name}" for name in SUMMED)
    conflict = ", ".join((period, *DIMENSIONS))
    insert = insert_sql(table, (period, *DIMENSIONS, *SUMMED), count)
    return f"{insert} ON CONFLICT ({conflict}) DO UPDATE SET {added}"
