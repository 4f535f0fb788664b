"""Usage aggregated per key and model over ``usage_records``."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from fastapi import APIRouter, Query
from sqlalchemy import case, func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.responses import Response

from db.base import utcnow
from db.models import ApiKey, UsageRecord
from gateway.auth import AdminPrincipal, ServicesDep
from gateway.responses import json_response

router = APIRouter(prefix="/v1/admin/usage", tags=["admin"])


async def usage_rows(
    sessions: async_sessionmaker[AsyncSession], since: datetime
) -> list[dict[str, Any]]:
    errors = func.sum(case((UsageRecord.status_code >= 400, 1), else_=0))
    query = (
        select(
            UsageRecord.api_key_id,
            ApiKey.name,
            UsageRecord.model,
            func.count(UsageRecord.id),
            func.sum(UsageRecord.prompt_tokens),
            func.sum(UsageRecord.completion_tokens),
            errors,
            func.avg(UsageRecord.latency_ms),
        )
        .outerjoin(ApiKey, ApiKey.id == UsageRecord.api_key_id)
        .where(UsageRecord.created_at >= since)
        .group_by(UsageRecord.api_key_id, ApiKey.name, UsageRecord.model)
        .order_by(func.count(UsageRecord.id).desc())
    )
    async with sessions() as session:
        result = await session.execute(query)
    return [
        {
            "object": "usage",
            "key_id": key_id,
            "key_name": name,
            "model": model,
            "requests": int(requests),
            "prompt_tokens": int(prompt or 0),
            "completion_tokens": int(completion or 0),
            "errors": int(failed or 0),
            "mean_latency_ms": round(float(latency or 0)),
        }
        for key_id, name, model, requests, prompt, completion, failed, latency in result.all()
    ]


@router.get("")
async def usage_report(
    principal: AdminPrincipal,
    services: ServicesDep,
    days: int = Query(30, ge=1, le=3650, description="how many days back to aggregate"),
) -> Response:
    since = utcnow() - timedelta(days=days)
    rows = await usage_rows(services.sessions, since)
    return json_response({"object": "list", "since": since.isoformat(), "data": rows})
