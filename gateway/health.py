"""Liveness and readiness."""

from __future__ import annotations

from fastapi import APIRouter, Request
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from starlette.responses import Response

from db.schema import SCHEMA_HEAD, current_revision
from gateway.auth import ServicesDep, presents_admin_key
from gateway.responses import json_response
from gateway.services import Services

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> Response:
    """The process is alive. Deliberately checks nothing else."""
    return json_response({"status": "ok"})


@router.get("/readyz")
async def readyz(request: Request, services: ServicesDep) -> Response:
    """Ready when the database answers at the expected schema; models are reported, not required.

    The reasons (which env var a provider lacks, a tool server's error, the schema revision)
    are the operators': shown with an admin key, and to anyone else only the status."""
    if request.app.state.drain.draining:
        # Fail at once on SIGTERM so the load balancer stops sending before the drain ends.
        return json_response({"status": "draining", "problems": ["shutting down"]}, 503)
    problems: list[str] = []
    revision: str | None = None
    try:
        async with services.engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
        revision = await current_revision(services.engine)
    except (SQLAlchemyError, OSError) as exc:
        problems.append(f"database unreachable: {type(exc).__name__}")
    else:
        if revision != SCHEMA_HEAD:
            problems.append(
                f"database schema at {revision}, expected {SCHEMA_HEAD}: run `llm-gateway migrate`"
            )
    models: dict[str, dict[str, object]] = {
        name: dict(model) for name, model in services.registry.summary().items()
    }
    for name, model in models.items():
        # Unpriced models still serve; the flag is for the operator, whose spend is undercounted.
        price = services.prices.price(name)
        model["price"] = price.as_dict() if price else None
        model["priced"] = price is not None
    tool_servers = {name: state.as_dict() for name, state in services.tool_servers.status().items()}
    degraded = any(not m["available"] for m in models.values()) or any(
        server["state"] != "ready" for server in tool_servers.values()
    )
    status = "unready" if problems else ("degraded" if degraded else "ok")
    code = 503 if problems else 200
    if not await _admin(request, services):
        return json_response({"status": status}, code)
    payload = {
        "status": status,
        "problems": problems,
        "database": {"revision": revision, "expected": SCHEMA_HEAD},
        "models": models,
        "unpriced_models": services.prices.unpriced(),
        "tool_servers": tool_servers,
    }
    return json_response(payload, code)


async def _admin(request: Request, services: Services) -> bool:
    try:
        return await presents_admin_key(request, services)
    except (SQLAlchemyError, OSError):
        return False  # no database to check the key against: the status says so
