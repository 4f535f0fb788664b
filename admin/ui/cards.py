"""What a reviewer sees of one held call: the call, who asked, and the conversation behind it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from admin.ui.card_details import (
    ArgumentRow,
    DecisionCounts,
    Hint,
    argument_rows,
    decision_counts,
    hints,
)
from admin.ui.queue_rows import card_context
from chat_service.messages import StoredMessage
from chat_service.tool_call_view import ToolCallView
from gateway.services import Services
from llm_service.types import AssistantMessage, Message, TextPart, ToolResultMessage, UserMessage

EXCERPT_MESSAGES = 4
EXCERPT_CHARS = 600


@dataclass(frozen=True, slots=True)
class ExcerptLine:
    role: str
    text: str


@dataclass(frozen=True, slots=True)
class PreviousResult:
    tool: str
    server: str | None
    is_error: bool


@dataclass(frozen=True, slots=True)
class CallCard:
    call: ToolCallView
    server: str | None
    requester: str
    expires_at: datetime | None
    excerpt: list[ExcerptLine]
    previous_result: PreviousResult | None
    model: str
    tool_description: str | None
    hints: list[Hint]
    arguments: list[ArgumentRow]
    requester_owner: str | None
    requester_roles: tuple[str, ...]
    decisions: DecisionCounts
    # The arguments as the reviewer sees them: each guardrail finding redacted, so the card
    # shows what was found and where, never the secret itself.
    shown_arguments: dict[str, Any]
    findings: list[dict[str, object]]


def _text(message: Message) -> str:
    if isinstance(message, ToolResultMessage):
        return message.text
    if not isinstance(message, UserMessage):
        return message.content or ""
    if isinstance(message.content, str):
        return message.content
    return " ".join(part.text for part in message.content if isinstance(part, TextPart))


def _line(stored: StoredMessage) -> ExcerptLine:
    text = _text(stored.message)
    if isinstance(stored.message, AssistantMessage) and stored.message.tool_calls:
        names = ", ".join(call.name for call in stored.message.tool_calls)
        text = f"{text}\n[calls {names}]".strip()
    if isinstance(stored.message, ToolResultMessage):
        text = f"[{stored.message.name or 'tool'} result] {text}"
    if len(text) > EXCERPT_CHARS:
        text = text[:EXCERPT_CHARS] + "…"
    return ExcerptLine(stored.message.role, text)


def _leading_messages(messages: list[StoredMessage], call_id: str) -> list[StoredMessage]:
    """The history up to and including the assistant message that proposed the call."""
    for index, stored in enumerate(messages):
        message = stored.message
        if isinstance(message, AssistantMessage) and any(
            call.id == call_id for call in message.tool_calls
        ):
            return messages[: index + 1]
    return messages


def _previous_result(
    leading: list[StoredMessage], servers: dict[str, str | None]
) -> PreviousResult | None:
    for stored in reversed(leading):
        message = stored.message
        if isinstance(message, ToolResultMessage):
            name = message.name or "tool"
            return PreviousResult(name, servers.get(message.tool_call_id), message.is_error)
        if isinstance(message, UserMessage):
            return None  # no tool has answered in this turn yet
    return None


def _server_of(services: Services, tool_name: str, server: str | None) -> str | None:
    if server is not None:
        return server
    tool = services.tools.tool(tool_name)
    return tool.server if tool else None


async def build_cards(services: Services, calls: list[ToolCallView]) -> list[CallCard]:
    """The cards of ``calls``: their conversations, messages and sibling calls read for all of
    them at once."""
    keys = {info.id: info for info in await services.keys.list()}
    counts = await decision_counts(services.sessions, {call.tool_name for call in calls})
    context = await card_context(services.sessions, (call.conversation_id for call in calls))
    cards: list[CallCard] = []
    for call in calls:
        servers = {
            sibling.call_id: _server_of(services, sibling.tool_name, sibling.server)
            for sibling in context.calls[call.conversation_id]
        }
        leading = _leading_messages(context.messages[call.conversation_id], call.call_id)
        tool = services.tools.tool(call.tool_name)
        key = keys.get(call.requested_by_key_id)
        screening = None if tool is None else services.tools.screen_arguments(tool, call.arguments)
        shown = call.arguments if screening is None else screening.value
        cards.append(
            CallCard(
                call=call,
                server=_server_of(services, call.tool_name, call.server),
                requester=key.name if key else f"key #{call.requested_by_key_id}",
                expires_at=call.expires_at,
                excerpt=[_line(m) for m in leading[-EXCERPT_MESSAGES:]],
                previous_result=_previous_result(leading, servers),
                model=context.models.get(call.conversation_id, ""),
                tool_description=tool.description if tool else None,
                hints=hints(tool.annotations) if tool else [],
                arguments=argument_rows(tool.parameters if tool else None, shown),
                requester_owner=key.owner if key else None,
                requester_roles=key.roles if key else (),
                decisions=counts[call.tool_name],
                shown_arguments=shown,
                findings=[] if screening is None else screening.audit_findings(),
            )
        )
    return cards
