"""One MCP ``tools/call`` through the tool loop's own machinery, outside any model's turn.

Each call gets a conversation of its own (model ``mcp``) so it is stored, audited, decided,
held for approval, listed in the admin queue and swept exactly as a model's call is: the
executor proposes it, takes the one policy decision (``ToolGovernance.decide``, audited as
``tool_call.policy_checked``), validates its arguments, parks it ``awaiting_approval`` when a
human must decide, and runs it at most once.
"""

from __future__ import annotations

import uuid
from typing import Any

import anyio
from opentelemetry.trace import Tracer

from chat_service.config import ToolLoopSettings
from chat_service.events import TurnEvent
from chat_service.executor import ToolExecutor
from chat_service.store import ConversationStore
from chat_service.tool_calls import CallState, ToolCallStore, ToolCallView
from db.base import utcnow
from gateway.keys import Principal
from governance import ToolGovernance
from llm_service.types import ToolCall

# The conversation's model: these calls came from an MCP client, not from a model.
MCP_MODEL = "mcp"
CANCELLED = "The MCP client cancelled the call (or went away) while it ran."


class GovernedCalls:
    def __init__(
        self,
        *,
        tools: ToolGovernance,
        calls: ToolCallStore,
        conversations: ConversationStore,
        settings: ToolLoopSettings,
        tracer: Tracer | None = None,
    ) -> None:
        self._calls = calls
        self._conversations = conversations
        self._executor = ToolExecutor(tools, calls, settings, tracer=tracer)

    async def propose(
        self, principal: Principal, bundle: str | None, name: str, arguments: dict[str, Any]
    ) -> ToolCallView:
        """Proposes and decides the call, and runs it when it needs no approval. The call as it
        stands: settled, or ``awaiting_approval``."""
        conversation = await self._conversations.create(
            principal.key_id, MCP_MODEL, principal.roles, bundle=bundle
        )
        call = ToolCall(f"mcp_{uuid.uuid4().hex}", name, arguments)
        proposed = self._executor.run_round(conversation, (call,), 0, budget=1)
        return await self._last(conversation.id, proposed)

    async def run_approved(self, call: ToolCallView) -> ToolCallView:
        """Runs an approved call (decided again at the last moment; at most once, whichever
        replica wins). A caller that goes away cancels the tool server's call."""
        try:
            return await self._last(call.conversation_id, self._executor.execute([call]))
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._calls.move(
                    call.record_id,
                    CallState.EXECUTING,
                    CallState.FAILED,
                    changes={"result": CANCELLED, "result_is_error": True, "finished_at": utcnow()},
                )
            raise

    async def get(self, record_id: str) -> ToolCallView | None:
        return await self._calls.get(record_id)

    async def _last(self, conversation_id: str, events: Any) -> ToolCallView:
        last: ToolCallView | None = None
        async for event in events:
            last = await self._kept(conversation_id, event)
        if last is None:  # the executor yields at least the proposal
            raise RuntimeError("the tool call produced no event")
        return last

    async def _kept(self, conversation_id: str, event: TurnEvent) -> ToolCallView | None:
        # Stored like a turn's events, so GET /v1/conversations/{id}/events tells the story.
        if event.durable:
            await self._conversations.add_event(conversation_id, event)
        return getattr(event, "tool_call", None)
