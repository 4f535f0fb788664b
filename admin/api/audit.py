"""The audit log: every tool-call state move, newest first, filterable, paginated by id."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import Select, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.responses import Response

from db.audit_chain import verify
from db.base import MAX_ROW_ID
from db.models import ApiKey, AuditEvent
from gateway.auth import AdminPrincipal, ServicesDep
from gateway.responses import json_response

router = APIRouter(prefix="/v1/admin/audit", tags=["admin"])

MAX_PAGE = 200


@dataclass(frozen=True, slots=True)
class AuditFilter:
    tool: str | None = None
    conversation: str | None = None
    actor: int | None = None
    action: str | None = None
    before: int | None = None  # the id the previous page ended at (keyset pagination)
    limit: int = 50


@dataclass(frozen=True, slots=True)
class AuditPage:
    events: list[dict[str, Any]]
    next_before: int | None  # pass as ``before`` for the next page; None on the last page


def _filtered(query: Select[AuditEvent], wanted: AuditFilter) -> Select[AuditEvent]:
    conditions = [
        (wanted.tool, AuditEvent.tool_name == wanted.tool),
        (wanted.conversation, AuditEvent.conversation_id == wanted.conversation),
        (wanted.actor, AuditEvent.actor_key_id == wanted.actor),
        (wanted.action, AuditEvent.action == wanted.action),
        (wanted.before, AuditEvent.id < (wanted.before or 0)),
    ]
    for value, condition in conditions:
        if value is not None:
            query = query.where(condition)
    return query


def event_json(event: AuditEvent, actor_owner: str | None = None) -> dict[str, Any]:
    return {
        "object": "audit_event",
        "id": event.id,
        "created_at": event.created_at.isoformat(),
        "actor_key_id": event.actor_key_id,
        # Who acted, whichever of their keys they used (keys are revoked; owners stay).
        "actor_owner": actor_owner,
        "action": event.action,
        "conversation_id": event.conversation_id,
        "record_id": event.tool_call_id,  # the tool call's record_id, as approvals name it
        "tool": event.tool_name,
        "detail": event.detail,
    }


async def audit_page(sessions: async_sessionmaker[AsyncSession], wanted: AuditFilter) -> AuditPage:
    limit = max(1, min(wanted.limit, MAX_PAGE))
    query = (
        _filtered(select(AuditEvent), wanted)
        .add_columns(ApiKey.owner)
        .outerjoin(ApiKey, ApiKey.id == AuditEvent.actor_key_id)
        .order_by(AuditEvent.id.desc())
        .limit(limit + 1)
    )
    async with sessions() as session:
        rows = list((await session.execute(query)).all())
    more = len(rows) > limit
    rows = rows[:limit]
    events = [event_json(event, owner) for event, owner in rows]
    return AuditPage(events, rows[-1][0].id if more and rows else None)


class AuditQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool: str | None = Field(None, max_length=200)
    conversation: str | None = Field(None, max_length=36)
    actor: int | None = Field(None, ge=1, le=MAX_ROW_ID, description="the acting key's id")
    action: str | None = Field(None, max_length=64)
    before: int | None = Field(
        None, ge=1, le=MAX_ROW_ID, description="`next_before` of the previous page"
    )
    limit: int = Field(50, ge=1, le=MAX_PAGE)


@router.get("/chain")
async def audit_chain(principal: AdminPrincipal, services: ServicesDep) -> Response:
    """The hash chain's state over the whole log (`llm-gateway audit verify` does the same)."""
    state = await verify(services.sessions)
    return json_response({"object": "audit_chain", **state.as_json()})


@router.get("")
async def list_audit(
    principal: AdminPrincipal, services: ServicesDep, query: Annotated[AuditQuery, Query()]
) -> Response:
    wanted = AuditFilter(**query.model_dump())
    page = await audit_page(services.sessions, wanted)
    return json_response({"object": "list", "data": page.events, "next_before": page.next_before})
