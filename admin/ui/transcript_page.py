"""A conversation's whole transcript, read-only: every message, each tool call with its state,
arguments, decision and result. Linked from the approval card."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from admin.ui.rendering import render
from admin.ui.security import SecuredRoute, SignedIn, error_page
from chat_service.errors import ConversationNotFound
from chat_service.messages import message_json
from gateway.auth import ServicesDep

router = APIRouter(prefix="/admin", route_class=SecuredRoute, include_in_schema=False)


@router.get("/conversations/{conversation_id}")
async def transcript_page(
    request: Request, conversation_id: str, services: ServicesDep, session: SignedIn
) -> Response:
    try:
        conversation = await services.conversations.get(conversation_id)
    except ConversationNotFound:
        return await error_page(request, "There is no such conversation.", 404, "Not found")
    messages = [
        message_json(m.message) for m in await services.conversations.messages(conversation_id)
    ]
    calls = {c.call_id: c for c in await services.tool_calls.for_conversation(conversation_id)}
    keys = {info.id: info for info in await services.keys.list()}
    owner = keys.get(conversation.api_key_id)
    context = {
        "conversation": conversation,
        "owner": owner,
        "messages": messages,
        "calls": calls,
        "names": {key_id: info.name for key_id, info in keys.items()},
    }
    return render(request, "transcript.html", context, session)
