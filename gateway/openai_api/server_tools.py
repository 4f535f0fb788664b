"""OpenAI-compatible calls to a `server_tools: true` model: the gateway runs the tool loop.

The caller's messages become a persisted conversation; the turn runs to its final answer, which
is returned as an ordinary completion. A turn paused for approval is waited on for
`tool_loop.server_tools_approval_wait_seconds`; after that the caller gets a message naming the
conversation to follow (and the `x-gateway-conversation-id` header on every such response).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from chat_service.events import TurnEvent
from gateway.keys import Principal
from gateway.services import Services
from llm_service.errors import InvalidRequest, UpstreamError
from llm_service.types import ChatRequest, SystemMessage, UserMessage


@dataclass(frozen=True, slots=True)
class ServerToolsOutcome:
    conversation_id: str
    status: str  # completed | awaiting_approval
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
    status, content = await _final(turn)
    if status == "awaiting_approval":
        status, content = await _wait_for_completion(services, conversation.id, content)
    if status == "awaiting_approval":
        content = (
            "This request is waiting for a reviewer to approve a tool call. The turn continues "
            f"in conversation {conversation.id}: follow GET /v1/conversations/{conversation.id}"
            "/events, or read GET /v1/conversations/{id} once it completes."
        )
    return ServerToolsOutcome(conversation.id, status, content)


async def _final(events: AsyncIterator[TurnEvent]) -> tuple[str, str]:
    """The turn's status and its last assistant text; a failed turn raises."""
    content = ""
    status = "failed"
    error = "the tool loop failed"
    async for event in events:
        content, status, error = _apply(event, content, status, error)
    if status == "failed":
        raise UpstreamError(error)
    return status, content


def _apply(event: TurnEvent, content: str, status: str, error: str) -> tuple[str, str, str]:
    if event.type == "message.completed" and event.data["message"]["role"] == "assistant":
        content = event.data["message"]["content"] or ""
    elif event.type == "error":
        error = f"{event.data['code']}: {event.data['message']}"
    elif event.type == "turn.finished":
        status = event.data["status"]
    return content, status, error


async def _wait_for_completion(
    services: Services, conversation_id: str, content: str
) -> tuple[str, str]:
    settings = services.settings.tool_loop
    cursor = 0
    status = "awaiting_approval"
    error = "the tool loop failed"
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(settings.server_tools_approval_wait_seconds):
            while status == "awaiting_approval":
                for event_id, event in await services.conversations.events(conversation_id, cursor):
                    cursor = event_id
                    content, status, error = _apply(event, content, status, error)
                if status == "awaiting_approval":
                    await asyncio.sleep(settings.follow_poll_seconds)
    if status == "failed":
        raise UpstreamError(error)
    return status, content
