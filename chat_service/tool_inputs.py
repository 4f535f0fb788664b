"""A tool server's requests for input during a call, forwarded to the conversation's caller.

Each request is a row (``tool_call_inputs``): the replica running the call writes it ``pending``
and polls it; whichever replica takes the caller's answer moves it by compare-and-set, so the
answer need not reach the replica that runs the call. A request nobody answers by its
``expires_at`` moves to ``expired`` and the server is told ``decline``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from chat_service.errors import InputNotPending, InvalidInput, ToolCallNotFound
from chat_service.tool_call_view import ToolCallView
from chat_service.tool_calls import ToolCallStore
from db.base import utcnow
from db.models import ToolCallInput
from mcp_client.hooks import InputRequest
from mcp_client.validation import ArgumentCheck

Action = Literal["accept", "decline", "cancel"]


class InputState(StrEnum):
    PENDING = "pending"
    ACCEPT = "accept"
    DECLINE = "decline"
    CANCEL = "cancel"
    EXPIRED = "expired"


@dataclass(frozen=True, slots=True)
class InputView:
    id: str
    record_id: str  # the tool call's
    conversation_id: str
    state: InputState
    message: str
    mode: Literal["form", "url"]
    requested_schema: dict[str, Any]
    url: str | None
    content: dict[str, Any] | None
    expires_at: datetime

    @property
    def action(self) -> Action:
        """What the server is told: an expired request is declined."""
        if self.state in (InputState.ACCEPT, InputState.CANCEL):
            return "accept" if self.state is InputState.ACCEPT else "cancel"
        return "decline"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "record_id": self.record_id,
            "state": self.state.value,
            "message": self.message,
            "mode": self.mode,
            "requested_schema": self.requested_schema,
            "url": self.url,
            "expires_at": self.expires_at.isoformat(),
        }


def _view(row: ToolCallInput) -> InputView:
    return InputView(
        id=row.id,
        record_id=row.tool_call_id,
        conversation_id=row.conversation_id,
        state=InputState(row.state),
        message=row.message,
        mode="url" if row.mode == "url" else "form",
        requested_schema=row.requested_schema,
        url=row.url,
        content=row.content,
        expires_at=row.expires_at,
    )


class ToolInputs:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        calls: ToolCallStore,
        poll_seconds: float,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._sessions = sessions
        self._calls = calls
        self._poll = poll_seconds
        self._clock = clock

    async def open(
        self, call: ToolCallView, request: InputRequest, expires_at: datetime
    ) -> InputView:
        row = ToolCallInput(
            id=str(uuid.uuid4()),
            tool_call_id=call.record_id,
            conversation_id=call.conversation_id,
            state=InputState.PENDING.value,
            message=request.message,
            mode=request.mode,
            requested_schema=request.requested_schema,
            url=request.url,
            expires_at=expires_at,
        )
        async with self._sessions.begin() as session:
            session.add(row)
        await self._calls.audit(call, "input_requested", None, {"input_id": row.id})
        return _view(row)

    async def get(self, input_id: str) -> InputView | None:
        async with self._sessions() as session:
            row = await session.get(ToolCallInput, input_id)
        return _view(row) if row else None

    async def pending(self, record_id: str) -> InputView | None:
        """The call's open request, if any (the latest: a server asks one thing at a time)."""
        async with self._sessions() as session:
            row = await session.scalar(
                select(ToolCallInput)
                .where(
                    ToolCallInput.tool_call_id == record_id,
                    ToolCallInput.state == InputState.PENDING.value,
                )
                .order_by(ToolCallInput.created_at.desc())
                .limit(1)
            )
        return _view(row) if row else None

    async def answer(
        self,
        call: ToolCallView,
        key_id: int,
        action: Action,
        content: dict[str, Any] | None,
    ) -> InputView:
        """The caller's answer to the call's open request: ``InputNotPending`` when there is
        none (or it expired), ``InvalidInput`` when accepted content breaks the schema."""
        request = await self.pending(call.record_id)
        if request is None or request.expires_at <= self._clock():
            raise InputNotPending("The tool call is not waiting for input.")
        kept = content if action == "accept" and request.mode == "form" else None
        if action == "accept" and request.mode == "form":
            problems = ArgumentCheck(request.requested_schema).problems(content or {})
            if content is None or problems:
                detail = "; ".join(problems) if content is not None else "`content` is required"
                raise InvalidInput(
                    f"The input does not match the requested schema: {detail}", param="content"
                )
        moved = await self._settle(request.id, InputState(action), kept, key_id)
        if moved is None:
            raise InputNotPending("The request for input was answered or expired first.")
        await self._calls.audit(
            call, "input_answered", key_id, {"input_id": request.id, "action": action}
        )
        return moved

    async def wait(self, request: InputView) -> InputView:
        """Until the request is answered (on any replica) or expires (then ``expired``)."""
        while True:
            current = await self.get(request.id)
            if current is None or current.state is not InputState.PENDING:
                return current or request
            left = (request.expires_at - self._clock()).total_seconds()
            if left <= 0:
                expired = await self._settle(request.id, InputState.EXPIRED)
                if expired is not None:
                    return expired
                continue  # answered in the meantime: read it
            await asyncio.sleep(min(self._poll, left))

    async def close(self, record_id: str) -> None:
        """The call ended: whatever it still asked for expires (a late answer is refused)."""
        async with self._sessions.begin() as session:
            await session.execute(
                update(ToolCallInput)
                .where(
                    ToolCallInput.tool_call_id == record_id,
                    ToolCallInput.state == InputState.PENDING.value,
                )
                .values(state=InputState.EXPIRED.value, answered_at=self._clock())
            )

    async def _settle(
        self,
        input_id: str,
        state: InputState,
        content: dict[str, Any] | None = None,
        key_id: int | None = None,
    ) -> InputView | None:
        async with self._sessions.begin() as session:
            result = await session.execute(
                update(ToolCallInput)
                .where(
                    ToolCallInput.id == input_id,
                    ToolCallInput.state == InputState.PENDING.value,
                )
                .values(
                    state=state.value,
                    content=content,
                    answered_by_key_id=key_id,
                    answered_at=self._clock(),
                )
            )
            if not getattr(result, "rowcount", 0):
                return None
            row = await session.get(ToolCallInput, input_id, populate_existing=True)
        return _view(row) if row else None


async def call_of(calls: ToolCallStore, conversation_id: str, record_id: str) -> ToolCallView:
    """The call of this conversation, or ``ToolCallNotFound``."""
    call = await calls.get(record_id)
    if call is None or call.conversation_id != conversation_id:
        raise ToolCallNotFound(f"No tool call `{record_id}` in this conversation.")
    return call
