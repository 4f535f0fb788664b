"""Calls to a `server_tools: true` model: the gateway runs the tool loop.

On ``/v1/chat/completions`` and ``/v1/messages`` alike (``gateway.chat_route``), the caller's
messages become a persisted conversation; the turn runs to its final answer, which is returned
as an ordinary completion or message. A turn paused for approval is waited on for
`tool_loop.server_tools_approval_wait_seconds`; after that the caller gets a message naming the
conversation to follow (and the `x-gateway-conversation-id` header on every such response).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

from accounts.principals import Principal
from chat_service.events import TurnStatus, TurnSummary, summarize
from gateway.services import Services
from llm_service.errors import InvalidRequest, UpstreamError
from llm_service.types import ChatRequest, SystemMessage, UserMessage


@dataclass(frozen=True, slots=True)
class ServerToolsOutcome:
    conversation_id: str
    status: TurnStatus  # completed | awaiting_approval
    content: str


async def run_server_tools(
    services: Services, principal: Principal, model: str, request: ChatRequest
) -> ServerToolsOutcome:
    *history, last = request.messages
    if not isinstance(last, UserMessage):
        raise InvalidRequest(
            "A model with server-side tools needs the messages to end with a user message.",
            param="messages",
        )
    system = "\n\n".join(m.content for m in history if isinstance(m, SystemMessage)) or None
    conversation = await services.conversations.create(
        principal.key_id, model, principal.roles, system_prompt=system
    )
    for message in history:
        if not isinstance(message, SystemMessage):
            await services.conversations.append(conversation.id, message)
    turn = services.background.relay(services.turns.start(conversation.id, principal.roles, last))
    summary = await summarize(turn)
    if summary.status is TurnStatus.AWAITING_APPROVAL:
        summary = await _wait_for_decisions(services, conversation.id, summary)
    if summary.status is TurnStatus.FAILED:
        if summary.error is None:
            raise UpstreamError("The tool loop ended without an answer.")
        # The error that ended the turn, as it was: an upstream 429 stays a 429 with Retry-After.
        raise summary.error.exception()
    content = summary.answer
    if summary.status is TurnStatus.AWAITING_APPROVAL:
        content = (
            "This request is waiting for a reviewer to approve a tool call. The turn continues "
            f"in conversation {conversation.id}: follow GET /v1/conversations/{conversation.id}"
            "/events, or read GET /v1/conversations/{id} once it completes."
        )
    return ServerToolsOutcome(conversation.id, summary.status, content)


async def _wait_for_decisions(
    services: Services, conversation_id: str, paused: TurnSummary
) -> TurnSummary:
    """The turn's events from its start, until it ends or the wait for approvals runs out."""
    settings = services.settings.tool_loop
    followed = services.conversations.follow(conversation_id, 0, settings.follow_poll_seconds)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(settings.server_tools_approval_wait_seconds):
            return await summarize(event async for _, event in followed)
    return paused
