"""Usage rollups, summed from each flushed batch and added to ``usage_hourly`` and
``usage_daily`` with upserts in the batch's own transaction, so they always agree with the raw rows.

Groups are written in a fixed order, so replicas flushing at once lock rows in the same order and
cannot deadlock on PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from db.models import LATENCY_BUCKETS_MS, LATENCY_COLUMNS, UsageDaily, UsageHourly

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


async def add_rollups(connection: AsyncConnection, hourly: list[dict[str, Any]]) -> None:
    """Adds the batch's hourly rollups and their daily sums (hours first, both in sorted order)."""
    if not hourly:
        return
    for table, period, rows in ((UsageHourly, "hour", hourly), (UsageDaily, "day", daily(hourly))):
        dialect = postgresql if connection.dialect.name == "postgresql" else sqlite
        statement = dialect.insert(table)
        statement = statement.on_conflict_do_update(
            index_elements=[period, *DIMENSIONS],
            set_={name: getattr(table, name) + statement.excluded[name] for name in SUMMED},
        )
        await connection.execute(statement, rows)
