"""The spend pages: usage with charts and CSV, the models' health and prices, key settings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import ValidationError
from starlette.responses import Response

from admin.api.keys import KeyChanges
from admin.api.usage import UsageQuery, as_csv, parse_dimensions, usage_report
from admin.ui import charts
from admin.ui.rendering import render
from admin.ui.security import SecuredRoute, SignedIn
from db.base import utcnow
from gateway.auth import ServicesDep
from gateway.services import Services
from llm_service.errors import InvalidRequest

router = APIRouter(prefix="/admin", route_class=SecuredRoute, include_in_schema=False)
USAGE_WINDOWS = (1, 7, 30, 90)
TOP = 10


def _days(since: datetime, now: datetime) -> list[str]:
    first = since.date()
    return [(first + timedelta(days=n)).isoformat() for n in range((now.date() - first).days + 1)]


def _top(rows: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    ranked = sorted(rows, key=lambda row: (-row["cost_usd"], -row["requests"]))
    return [{**row, "label": row.get(name) or "(none)"} for row in ranked[:TOP]]


async def usage_context(services: Services, days: int) -> dict[str, Any]:
    now = utcnow()
    since = now - timedelta(days=days)
    daily = {
        row["period"]: row
        for row in await usage_report(services.sessions, UsageQuery(since, (), "day"))
    }
    per_day = [daily.get(day, {"period": day, "requests": 0, "cost_usd": 0.0, "errors": 0,
                               "prompt_tokens": 0, "completion_tokens": 0})
               for day in _days(since, now)]  # fmt: skip
    keys = await usage_report(services.sessions, UsageQuery(since, ("key",)))
    for row in keys:
        row["key_label"] = row["key_name"] or "unknown key"
    top_keys = _top(keys, "key_label")
    teams = _top(await usage_report(services.sessions, UsageQuery(since, ("team",))), "team")
    models = _top(await usage_report(services.sessions, UsageQuery(since, ("model",))), "model")
    return {
        "days": days,
        "windows": USAGE_WINDOWS,
        "per_day": per_day,
        "spend_chart": charts.columns(
            [(r["period"], r["cost_usd"]) for r in per_day], label="Spend per day", fmt=charts.usd
        ),
        "requests_chart": charts.columns(
            [(r["period"], r["requests"]) for r in per_day],
            label="Requests per day",
            fmt=charts.count,
        ),
        "top_keys": top_keys,
        "keys_chart": charts.bars(
            [(r["label"], r["cost_usd"]) for r in top_keys], label="Top keys", fmt=charts.usd
        ),
        "teams": teams,
        "teams_chart": charts.bars(
            [(r["label"], r["cost_usd"]) for r in teams], label="Teams", fmt=charts.usd
        ),
        "models": models,
        "models_chart": charts.bars(
            [(r["label"], r["cost_usd"]) for r in models], label="Models", fmt=charts.usd
        ),
        "rows": await usage_report(services.sessions, UsageQuery(since)),
        "total_cost": sum(r["cost_usd"] for r in per_day),
        "total_requests": sum(r["requests"] for r in per_day),
    }


@router.get("/usage")
async def usage_page(
    request: Request,
    services: ServicesDep,
    session: SignedIn,
    days: Annotated[int, Query(ge=1, le=3650)] = 30,
) -> Response:
    return render(request, "usage.html", await usage_context(services, days), session)


@router.get("/usage.csv")
async def usage_csv(
    services: ServicesDep,
    session: SignedIn,
    days: Annotated[int, Query(ge=1, le=3650)] = 30,
    by: Annotated[str, Query(max_length=100)] = "key,model",
) -> Response:
    query = UsageQuery(utcnow() - timedelta(days=days), parse_dimensions(by), "day")
    return Response(
        as_csv(await usage_report(services.sessions, query)),
        media_type="text/csv; charset=utf-8",
        headers={"content-disposition": f'attachment; filename="usage-{days}d.csv"'},
    )


@router.get("/models")
async def models_page(request: Request, services: ServicesDep, session: SignedIn) -> Response:
    since = utcnow() - timedelta(hours=1)
    recent = {
        row["model"]: row
        for row in await usage_report(services.sessions, UsageQuery(since, ("model",)))
    }
    models = []
    for config in services.settings.models:
        state = services.registry.summary().get(config.name, {})
        price = services.prices.price(config.name)
        last_hour = recent.get(config.name)
        requests = last_hour["requests"] if last_hour else 0
        models.append(
            {
                "name": config.name,
                "provider": config.provider,
                "upstream": config.upstream_model,
                "available": state.get("available", False),
                "reason": state.get("reason"),
                "price": price,
                "fallbacks": [*config.fallbacks, *config.context_window_fallbacks],
                "circuits": [
                    (upstream.deployment.id or config.name, upstream.breaker.state)
                    for upstream in services.router.balancer.upstreams(config.name)
                ],
                "requests": requests,
                "error_rate": (last_hour["errors"] / requests) if last_hour and requests else None,
                "p50": last_hour["p50_latency_ms"] if last_hour else None,
                "p95": last_hour["p95_latency_ms"] if last_hour else None,
            }
        )
    context = {"models": models, "unpriced": services.prices.unpriced()}
    return render(request, "models.html", context, session)


def month_start(now: datetime) -> datetime:
    return datetime(now.year, now.month, 1, tzinfo=UTC)


async def spend_this_month(services: Services) -> dict[int, float]:
    rows = await usage_report(services.sessions, UsageQuery(month_start(utcnow()), ("key",)))
    return {row["key_id"]: row["cost_usd"] for row in rows if row["key_id"]}


def _number(field: str, text: str) -> float | None:
    if not text.strip():
        return None
    try:
        return float(text)
    except ValueError:
        raise InvalidRequest(f"`{field}` must be a number.", param=field) from None


def form_changes(
    *,
    team: str,
    expires: str,
    models: str,
    requests_per_minute: str,
    tokens_per_minute: str,
    budget_per_day: str,
    budget_per_month: str,
) -> KeyChanges:
    """The keys page's settings form as a PATCH body: an empty field clears the setting."""
    limits = {
        "requests_per_minute": _number("requests_per_minute", requests_per_minute),
        "tokens_per_minute": _number("tokens_per_minute", tokens_per_minute),
        "budget_per_day": _number("budget_per_day", budget_per_day),
        "budget_per_month": _number("budget_per_month", budget_per_month),
    }
    allowed = [name.strip() for name in models.replace(",", " ").split() if name.strip()]
    return KeyChanges.model_validate(
        {
            "team": team.strip() or None,
            "expires_at": f"{expires}T00:00:00Z" if expires.strip() else None,
            "allowed_models": allowed or None,
            "limits": limits,
        }
    )


def first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    field = ".".join(str(part) for part in error["loc"])
    return f"`{field}`: {error['msg']}"
