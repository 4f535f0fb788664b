"""Tool pinning against rug pulls: a tool definition must be reviewed before models see it.

A tool seen for the first time, or whose ``definition_hash`` changed, gets a ``pending_review``
pin. Until an admin approves that exact definition, the tool is offered to no model and calls to
it are denied like calls to an unknown tool. Tools of trusted servers skip review.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from db.base import utcnow
from db.models import AuditEvent, ToolPin
from mcp_client.types import StandardizedTool


class PinStatus(StrEnum):
    PENDING_REVIEW = "pending_review"
    APPROVED = "approved"
    REJECTED = "rejected"


@dataclass(frozen=True, slots=True)
class PinView:
    id: int
    tool_name: str
    server: str
    definition_hash: str
    definition: dict[str, Any]
    status: PinStatus
    created_at: datetime
    decided_by_key_id: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "object": "tool_review",
            "id": self.id,
            "tool": self.tool_name,
            "server": self.server,
            "definition_hash": self.definition_hash,
            "definition": self.definition,
            "status": self.status.value,
            "created_at": self.created_at.isoformat(),
            "decided_by_key_id": self.decided_by_key_id,
        }


def definition_of(tool: StandardizedTool) -> dict[str, Any]:
    """What the hash covers, as a reviewer reads it."""
    return {
        "name": tool.original_name,
        "description": tool.description,
        "parameters": tool.parameters,
        "output_schema": tool.output_schema,
    }


def _view(row: ToolPin) -> PinView:
    return PinView(
        row.id,
        row.tool_name,
        row.server,
        row.definition_hash,
        row.definition,
        PinStatus(row.status),
        row.created_at,
        row.decided_by_key_id,
    )


class ToolPins:
    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], clock: Callable[[], datetime] = utcnow
    ) -> None:
        self._sessions = sessions
        self._clock = clock

    async def approved(self) -> set[tuple[str, str]]:
        """(tool name, definition hash) pairs an admin approved."""
        async with self._sessions() as session:
            rows = await session.execute(
                select(ToolPin.tool_name, ToolPin.definition_hash).where(
                    ToolPin.status == PinStatus.APPROVED.value
                )
            )
            return {(name, digest) for name, digest in rows.all()}

    async def known(self) -> set[tuple[str, str]]:
        async with self._sessions() as session:
            rows = await session.execute(select(ToolPin.tool_name, ToolPin.definition_hash))
            return {(name, digest) for name, digest in rows.all()}

    async def hold(self, tools: Iterable[StandardizedTool]) -> list[PinView]:
        """Pins each new definition as pending review; one another replica wrote first is kept.
        Returns the pins written here (each new definition is written by exactly one replica)."""
        held: list[PinView] = []
        for tool in tools:
            row = ToolPin(
                tool_name=tool.name,
                server=tool.server,
                definition_hash=tool.definition_hash,
                definition=definition_of(tool),
                status=PinStatus.PENDING_REVIEW.value,
                created_at=self._clock(),
            )
            try:
                async with self._sessions.begin() as session:
                    session.add(row)
                    session.add(_audit(row, "tool.pending_review", None))
                    await session.flush()
                    pin = _view(row)
            except IntegrityError:
                continue
            held.append(pin)
        return held

    async def in_status(self, status: PinStatus) -> list[PinView]:
        async with self._sessions() as session:
            rows = await session.scalars(
                select(ToolPin).where(ToolPin.status == status.value).order_by(ToolPin.id)
            )
            return [_view(row) for row in rows]

    async def get(self, pin_id: int) -> PinView | None:
        async with self._sessions() as session:
            row = await session.get(ToolPin, pin_id)
            return _view(row) if row else None

    async def previous(self, pin: PinView) -> PinView | None:
        """The latest approved definition of the same tool, to compare against."""
        async with self._sessions() as session:
            row = await session.scalar(
                select(ToolPin)
                .where(
                    ToolPin.tool_name == pin.tool_name,
                    ToolPin.status == PinStatus.APPROVED.value,
                    ToolPin.id != pin.id,
                )
                .order_by(ToolPin.id.desc())
                .limit(1)
            )
            return _view(row) if row else None

    async def decide(self, pin_id: int, approve: bool, actor_key_id: int) -> PinView | None:
        """Compare-and-set from pending_review; None when it was not pending (or not found)."""
        status = PinStatus.APPROVED if approve else PinStatus.REJECTED
        async with self._sessions.begin() as session:
            result = await session.execute(
                update(ToolPin)
                .where(ToolPin.id == pin_id, ToolPin.status == PinStatus.PENDING_REVIEW.value)
                .values(
                    status=status.value, decided_at=self._clock(), decided_by_key_id=actor_key_id
                )
            )
            if not getattr(result, "rowcount", 0):
                return None
            row = await session.get(ToolPin, pin_id)
            assert row is not None
            session.add(_audit(row, f"tool.{status.value}", actor_key_id))
            return _view(row)


def _audit(row: ToolPin, action: str, actor_key_id: int | None) -> AuditEvent:
    return AuditEvent(
        actor_key_id=actor_key_id,
        action=action,
        tool_name=row.tool_name,
        detail={"server": row.server, "definition_hash": row.definition_hash},
    )
