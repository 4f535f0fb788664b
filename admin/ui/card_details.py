"""What a held call will do, for the reviewer: the tool's own account of itself, each argument
against the schema, who asks, and how reviewers decided this tool lately."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from db.base import utcnow
from db.models import AuditEvent

RECENT_DAYS = 30

# MCP's tool annotations, as a reviewer should read them (hints the server gives, not promises).
_HINTS = (
    ("readOnlyHint", True, "read-only", "safe"),
    ("destructiveHint", True, "destructive", "danger"),
    ("idempotentHint", True, "idempotent", "safe"),
    ("openWorldHint", True, "open world (reaches outside systems)", "warn"),
)


@dataclass(frozen=True, slots=True)
class Hint:
    label: str
    tone: str  # safe | warn | danger: the pill's colour


@dataclass(frozen=True, slots=True)
class ArgumentRow:
    """One argument beside what the schema says of it. Arguments that break the schema never
    reach a reviewer (the decision denies the call first), so a row shows no problems."""

    name: str
    value: str | None  # JSON; None when the model did not send it
    default: str | None  # JSON of the schema's default, used when the value is absent
    allowed: list[str]  # the enum, as JSON values
    kind: str | None
    description: str | None


@dataclass(frozen=True, slots=True)
class DecisionCounts:
    approved: int
    rejected: int
    days: int = RECENT_DAYS


def hints(annotations: dict[str, Any]) -> list[Hint]:
    found = [Hint(label, tone) for key, on, label, tone in _HINTS if annotations.get(key) is on]
    if annotations.get("destructiveHint") is False and annotations.get("readOnlyHint") is not True:
        found.append(Hint("not destructive", "safe"))
    return found


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _row(name: str, spec: dict[str, Any], arguments: dict[str, Any]) -> ArgumentRow:
    kind = spec.get("type")
    return ArgumentRow(
        name=name,
        value=_json(arguments[name]) if name in arguments else None,
        default=_json(spec["default"]) if "default" in spec else None,
        allowed=[_json(option) for option in spec.get("enum", [])],
        kind=kind if isinstance(kind, str) else None,
        description=spec.get("description"),
    )


def argument_rows(schema: dict[str, Any] | None, arguments: dict[str, Any]) -> list[ArgumentRow]:
    """Every parameter the schema declares; then the arguments of a schema that declares no
    properties (any argument is allowed there; with properties, an undeclared one is denied)."""
    properties: dict[str, Any] = (schema or {}).get("properties") or {}
    rows = [
        _row(name, spec if isinstance(spec, dict) else {}, arguments)
        for name, spec in properties.items()
    ]
    rows.extend(_row(name, {}, arguments) for name in arguments if name not in properties)
    return rows


async def decision_counts(
    sessions: async_sessionmaker[AsyncSession], tools: set[str]
) -> dict[str, DecisionCounts]:
    """Approvals and rejections by a person (the audit log's actor) per tool, lately."""
    if not tools:
        return {}
    since = utcnow() - timedelta(days=RECENT_DAYS)
    query = (
        select(AuditEvent.tool_name, AuditEvent.action, func.count())
        .where(
            AuditEvent.tool_name.in_(tools),
            AuditEvent.action.in_(("tool_call.approved", "tool_call.rejected")),
            AuditEvent.actor_key_id.is_not(None),
            AuditEvent.created_at >= since,
        )
        .group_by(AuditEvent.tool_name, AuditEvent.action)
    )
    async with sessions() as session:
        rows = (await session.execute(query)).all()
    counts = {tool: {"approved": 0, "rejected": 0} for tool in tools}
    for tool, action, count in rows:
        if tool is not None:
            counts[tool][action.removeprefix("tool_call.")] = count
    return {tool: DecisionCounts(c["approved"], c["rejected"]) for tool, c in counts.items()}
