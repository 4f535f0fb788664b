"""One MCP ``tools/call`` through the tool loop's own machinery, outside any model's turn.

Each call gets a conversation of its own (model ``mcp``) so it is stored, audited, decided,
held for approval, listed in the admin queue and swept exactly as a model's call is: the
executor proposes it, takes the one policy decision (``ToolGovernance.decide``, audited as
``tool_call.policy_checked``), validates its arguments, parks it ``awaiting_approval`` when a
human must decide, and runs it at most once.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
from opentelemetry.trace import Tracer
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from accounts.principals import Principal
from chat_service.call_hooks import CallListeners
from chat_service.config import ToolLoopSettings
from chat_service.events import Stored, ToolCallProgress, TurnEvent
from chat_service.executor import ToolExecutor
from chat_service.store import ConversationStore
from chat_service.tool_call_view import CallState, ToolCallView, arguments_hash
from chat_service.tool_calls import ToolCallStore
from chat_service.transitions import Cancel, Outcome, Settle
from db.base import utcnow
from db.models import Conversation, ToolCallRecord
from governance import ToolGovernance
from guardrails import Screening
from llm_service.types import ToolCall

# The conversation's model: these calls came from an MCP client, not from a model.
MCP_MODEL = "mcp"
_WAITING = (CallState.AWAITING_APPROVAL, CallState.APPROVED)  # not yet running
_RESUMABLE = tuple(state.value for state in _WAITING)
CANCELLED = "The MCP client cancelled the call (or went away) while it ran."
# Hears the tool server's progress while the call runs here (forwarded to the MCP client).
OnProgress = Callable[[ToolCallProgress], Awaitable[None]]


class GovernedCalls:
    def __init__(
        self,
        *,
        tools: ToolGovernance,
        calls: ToolCallStore,
        conversations: ConversationStore,
        settings: ToolLoopSettings,
        sessions: async_sessionmaker[AsyncSession],
        tracer: Tracer | None = None,
        on_screened: Callable[[Screening], None] | None = None,
    ) -> None:
        self._sessions = sessions
        self._calls = calls
        self._conversations = conversations
        listeners = CallListeners(progress_interval_seconds=settings.progress_interval_seconds)
        self._executor = ToolExecutor(
            tools, calls, settings, tracer=tracer, listeners=listeners, on_screened=on_screened
        )

    async def propose(
        self,
        principal: Principal,
        bundle: str | None,
        name: str,
        arguments: dict[str, Any],
        on_progress: OnProgress | None = None,
    ) -> ToolCallView:
        """Proposes and decides the call, and runs it when it needs no approval. The call as it
        stands: settled, or ``awaiting_approval``."""
        conversation = await self._conversations.create(
            principal.key_id, MCP_MODEL, principal.roles, bundle=bundle
        )
        call = ToolCall(f"mcp_{uuid.uuid4().hex}", name, arguments)
        proposed = await self._last(
            conversation.id,
            self._executor.run_round(conversation, (call,), 0, budget=1),
            on_progress,
        )
        if proposed is None:  # the executor always yields the proposal first
            raise RuntimeError("the tool call produced no event")
        return proposed

    async def held(
        self, principal: Principal, name: str, arguments: dict[str, Any]
    ) -> ToolCallView | None:
        """The key's earlier MCP call of this tool with these arguments, still awaiting its
        approval or approved and not yet run: asking again resumes it rather than filing a
        second request for a reviewer (and an approval given after the first wait is used)."""
        query = (
            select(ToolCallRecord.id)
            .join(Conversation, Conversation.id == ToolCallRecord.conversation_id)
            .where(
                Conversation.model == MCP_MODEL,
                ToolCallRecord.requested_by_key_id == principal.key_id,
                ToolCallRecord.tool_name == name,
                ToolCallRecord.arguments_hash == arguments_hash(arguments),
                ToolCallRecord.state.in_(_RESUMABLE),
            )
            .order_by(ToolCallRecord.created_at.desc())
            .limit(1)
        )
        async with self._sessions() as session:
            record_id = await session.scalar(query)
        return None if record_id is None else await self._calls.get(record_id)

    async def run_approved(
        self, call: ToolCallView, on_progress: OnProgress | None = None
    ) -> ToolCallView:
        """Runs an approved call (decided again at the last moment; at most once, whichever
        replica wins)."""
        ran = await self._last(call.conversation_id, self._executor.execute([call]), on_progress)
        # None: another request holding the same call won the race to run it.
        return ran or await self._calls.get(call.record_id) or call

    async def get(self, record_id: str) -> ToolCallView | None:
        return await self._calls.get(record_id)

    async def cancel_waiting(self, call: ToolCallView, principal: Principal) -> ToolCallView | None:
        """Settles a call that has not started running as ``cancelled`` (``tasks/cancel``);
        None when it is not waiting, or moved on meanwhile (it started, or was decided)."""
        if call.state not in _WAITING:
            return None
        cancel = Cancel(from_state=call.state, at=utcnow(), actor_key_id=principal.key_id)
        return await self._calls.move(call.record_id, cancel)

    async def owned_page(self, principal: Principal, offset: int, limit: int) -> list[ToolCallView]:
        """This key's MCP calls, newest first (``tasks/list``)."""
        query = (
            select(ToolCallRecord.id)
            .join(Conversation, Conversation.id == ToolCallRecord.conversation_id)
            .where(
                Conversation.model == MCP_MODEL,
                ToolCallRecord.requested_by_key_id == principal.key_id,
            )
            .order_by(ToolCallRecord.created_at.desc(), ToolCallRecord.id.desc())
            .offset(offset)
            .limit(limit)
        )
        async with self._sessions() as session:
            record_ids = list(await session.scalars(query))
        calls = [await self._calls.get(record_id) for record_id in record_ids]
        return [call for call in calls if call is not None]

    async def owned(self, record_id: str, principal: Principal) -> ToolCallView | None:
        """The call of this record when this key made it over MCP (a model's calls in a
        conversation are the turn's to run, never an MCP task's)."""
        call = await self._calls.get(record_id)
        if call is None or call.requested_by_key_id != principal.key_id:
            return None
        conversation = await self._conversations.get(call.conversation_id)
        return call if conversation.model == MCP_MODEL else None

    async def _last(
        self,
        conversation_id: str,
        events: AsyncIterator[TurnEvent | Stored],
        on_progress: OnProgress | None = None,
    ) -> ToolCallView | None:
        """The call as the last event left it. A caller that goes away cancels the tool
        server's call; the call then ends ``failed`` rather than ``executing`` forever."""
        last: ToolCallView | None = None
        try:
            async for event in events:
                last = await self._kept(conversation_id, event) or last
                if on_progress is not None and isinstance(event, ToolCallProgress):
                    await on_progress(event)
        except BaseException:
            if last is not None:
                with anyio.CancelScope(shield=True):
                    await self._abandoned(last)
            raise
        return last

    async def _abandoned(self, call: ToolCallView) -> None:
        failed = Settle(ended=Outcome(CANCELLED, True, utcnow()))
        await self._calls.move(call.record_id, failed)

    async def _kept(self, conversation_id: str, event: TurnEvent | Stored) -> ToolCallView | None:
        # Stored like a turn's events, so GET /v1/conversations/{id}/events tells the story.
        if isinstance(event, Stored):  # written with the move it reports
            return getattr(event.event, "tool_call", None)
        if event.durable:
            await self._conversations.add_event(conversation_id, event)
        return getattr(event, "tool_call", None)
