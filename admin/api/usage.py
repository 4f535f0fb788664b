"""Usage and spend, answered from the rollups, never the raw rows.

Grouped by any of key, team, model and provider, in total or per day or hour, as JSON or CSV.
Whole days come from ``usage_daily``; hours (``interval=hour``, and the partial first day of a
"last N days" window) from ``usage_hourly``. A 30-day report sums ~24x fewer rows that way.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from sqlalchemy import ColumnElement, Select, func, select, union_all
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.responses import Response

from db.base import utcnow
from db.models import ApiKey
from db.usage_models import LATENCY_BUCKETS_MS, LATENCY_COLUMNS, UsageDaily, UsageHourly
from gateway.auth import AdminPrincipal, ServicesDep
from gateway.responses import json_response
from llm_service.errors import InvalidRequest

router = APIRouter(prefix="/v1/admin/usage", tags=["admin"])

Dimension = Literal["key", "team", "model", "provider"]
Interval = Literal["total", "day", "hour"]
DIMENSIONS: dict[str, str] = {
    "key": "api_key_id",
    "team": "team",
    "model": "model",
    "provider": "provider",
}
TOTALS = (
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


@dataclass(frozen=True, slots=True)
class UsageQuery:
    since: datetime
    by: tuple[Dimension, ...] = ("key", "model")
    interval: Interval = "total"


def parse_dimensions(text: str) -> tuple[Dimension, ...]:
    wanted = tuple(part.strip() for part in text.split(",") if part.strip())
    bad = [part for part in wanted if part not in DIMENSIONS]
    if bad or len(set(wanted)) != len(wanted):
        raise InvalidRequest(
            "`by` takes distinct names among key, team, model, provider, comma-separated.",
            param="by",
        )
    return wanted  # type: ignore[return-value]  # checked against DIMENSIONS above


def _day(moment: Any, dialect: str) -> Any:
    if dialect == "postgresql":
        return func.date_trunc("day", func.timezone("UTC", moment))
    return func.substr(moment, 1, 10)  # SQLite stores "YYYY-MM-DD HH:..."


def _period_text(value: object, interval: Interval) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d" if interval == "day" else "%Y-%m-%dT%H:00:00Z")
    return str(value)[:10]


def _part(
    table: type[UsageHourly] | type[UsageDaily],
    moment: Any,
    condition: ColumnElement[bool],
    query: UsageQuery,
    dialect: str,
) -> Select[Any]:
    columns: list[Any] = []
    if query.interval == "day":
        columns.append(_day(moment, dialect).label("period"))
    elif query.interval == "hour":
        columns.append(moment.label("period"))
    columns += [getattr(table, DIMENSIONS[name]).label(name) for name in query.by]
    columns += [getattr(table, name).label(name) for name in TOTALS]
    return select(*columns).where(condition)


def _rollup_rows(query: UsageQuery, dialect: str) -> Any:
    """The rollup rows covering ``query.since`` to now: whole days from the daily table, the rest
    (the first, partial day; or everything, per hour) from the hourly one."""
    since_hour = query.since.replace(minute=0, second=0, microsecond=0)
    if query.interval == "hour":
        return _part(UsageHourly, UsageHourly.hour, UsageHourly.hour >= since_hour, query, dialect)
    first_day = since_hour.replace(hour=0)
    if first_day < since_hour:
        first_day += timedelta(days=1)
    hours = UsageHourly.hour
    return union_all(
        _part(UsageDaily, UsageDaily.day, UsageDaily.day >= first_day, query, dialect),
        _part(UsageHourly, hours, (hours >= since_hour) & (hours < first_day), query, dialect),
    )


async def usage_report(
    sessions: async_sessionmaker[AsyncSession], query: UsageQuery
) -> list[dict[str, Any]]:
    async with sessions() as session:
        dialect = session.get_bind().dialect.name
        rows = _rollup_rows(query, dialect).subquery()
        keys: list[ColumnElement[Any]] = [rows.c[name] for name in query.by]
        has_period = query.interval != "total"
        if has_period:
            keys.insert(0, rows.c.period)
        sums = [func.sum(rows.c[name]) for name in TOTALS]
        statement = (
            select(*keys, *sums)
            .group_by(*keys)
            .order_by(*([keys[0]] if has_period else []), func.sum(rows.c.cost_usd).desc())
        )
        result = (await session.execute(statement)).all()
        names = await _key_names(session, query, result, has_period)
    return [_row(query, tuple(values), names, has_period) for values in result]


async def _key_names(
    session: AsyncSession, query: UsageQuery, result: Sequence[Any], has_period: bool
) -> dict[int, str]:
    if "key" not in query.by:
        return {}
    position = query.by.index("key") + (1 if has_period else 0)
    ids = {values[position] for values in result if values[position]}
    if not ids:
        return {}
    rows = await session.execute(select(ApiKey.id, ApiKey.name).where(ApiKey.id.in_(ids)))
    return {key_id: name for key_id, name in rows.all()}


def _row(
    query: UsageQuery, values: tuple[Any, ...], names: dict[int, str], has_period: bool
) -> dict[str, Any]:
    row: dict[str, Any] = {"object": "usage"}
    if has_period:
        row["period"] = _period_text(values[0], query.interval)
        values = values[1:]
    for name, value in zip(query.by, values, strict=False):
        if name == "key":
            row["key_id"] = value or None
            row["key_name"] = names.get(value) if value else None
        else:
            row[name] = value or None
    totals = dict(zip(TOTALS, values[len(query.by) :], strict=True))
    requests = int(totals["requests"] or 0)
    buckets = [int(totals[name] or 0) for name in LATENCY_COLUMNS]
    row |= {
        "requests": requests,
        "errors": int(totals["errors"] or 0),
        "prompt_tokens": int(totals["prompt_tokens"] or 0),
        "completion_tokens": int(totals["completion_tokens"] or 0),
        "cached_tokens": int(totals["cached_tokens"] or 0),
        "reasoning_tokens": int(totals["reasoning_tokens"] or 0),
        "cost_usd": round(float(totals["cost_usd"] or 0), 6),
        "unpriced_requests": int(totals["unpriced_requests"] or 0),
        "mean_latency_ms": round(int(totals["latency_ms_sum"] or 0) / requests) if requests else 0,
        "p50_latency_ms": latency_quantile(buckets, 0.5),
        "p95_latency_ms": latency_quantile(buckets, 0.95),
    }
    return row


def latency_quantile(buckets: Sequence[int], quantile: float) -> int | None:
    """The upper bound of the histogram bucket holding the quantile (None above the last one)."""
    total = sum(buckets)
    if not total:
        return None
    seen = 0
    for bound, count in zip(LATENCY_BUCKETS_MS, buckets, strict=False):
        seen += count
        if seen >= quantile * total:
            return bound
    return None


async def usage_rows(
    sessions: async_sessionmaker[AsyncSession], since: datetime
) -> list[dict[str, Any]]:
    """Per key and model since ``since`` (the UI's table)."""
    return await usage_report(sessions, UsageQuery(since))


def as_csv(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return ""
    columns = [name for name in rows[0] if name != "object"]
    out = io.StringIO()
    writer = csv.DictWriter(out, columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows({name: _cell(value) for name, value in row.items()} for row in rows)
    return out.getvalue()


def _cell(value: object) -> object:
    # A key or team name starting like a formula must not run as one in a spreadsheet.
    if isinstance(value, str) and value.startswith(("=", "+", "-", "@", "\t", "\r")):
        return "'" + value
    return value


USAGE_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Usage rows as JSON, or as CSV with `format=csv`",
        "content": {"application/json": {}, "text/csv": {"schema": {"type": "string"}}},
    }
}


@router.get("", responses=USAGE_RESPONSES)
async def usage_endpoint(
    principal: AdminPrincipal,
    services: ServicesDep,
    *,
    days: Annotated[int, Query(ge=1, le=3650, description="how many days back")] = 30,
    by: Annotated[str, Query(description="comma-separated: key, team, model, provider")] = (
        "key,model"
    ),
    interval: Annotated[Interval, Query(description="total, or a row per day or hour")] = "total",
    format: Annotated[Literal["json", "csv"], Query()] = "json",
) -> Response:
    since = utcnow() - timedelta(days=days)
    rows = await usage_report(services.sessions, UsageQuery(since, parse_dimensions(by), interval))
    if format == "csv":
        return Response(
            as_csv(rows),
            media_type="text/csv; charset=utf-8",
            headers={"content-disposition": 'attachment; filename="usage.csv"'},
        )
    return json_response({"object": "list", "since": since.isoformat(), "data": rows})
