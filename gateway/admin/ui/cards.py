"""What a reviewer sees of one held call: the call, who asked, and the conversation behind it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from chat_service.messages import StoredMessage
from chat_service.tool_calls import ToolCallView
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
    # The server's MCP annotations (destructiveHint, readOnlyHint, ...): untrusted hints, shown
    # so the reviewer knows what the server claims; empty when the tool is gone or has none.
    hints: dict[str, bool] = field(default_factory=dict)


def _text(message: Message) -> str:
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


def _hints(services: Services, call: ToolCallView) -> dict[str, bool]:
    tool = services.tools.tool(call.tool_name)
    if tool is None:
        return {}
    return {k: v for k, v in tool.annotations.items() if k.endswith("Hint") and isinstance(v, bool)}


def _server_of(services: Services, call: ToolCallView) -> str | None:
    if call.server is not None:
        return call.server
    tool = services.tools.tool(call.tool_name)
    return tool.server if tool else None


async def build_cards(services: Services, calls: list[ToolCallView]) -> list[CallCard]:
    names = {info.id: info.name for info in await services.keys.list()}
    cards: list[CallCard] = []
    for call in calls:
        messages = await services.conversations.messages(call.conversation_id)
        siblings = await services.tool_calls.for_conversation(call.conversation_id)
        servers = {sibling.call_id: _server_of(services, sibling) for sibling in siblings}
        leading = _leading_messages(messages, call.call_id)
        cards.append(
            CallCard(
                call=call,
                server=_server_of(services, call),
                requester=names.get(call.requested_by_key_id, f"key #{call.requested_by_key_id}"),
                expires_at=call.expires_at,
                excerpt=[_line(m) for m in leading[-EXCERPT_MESSAGES:]],
                previous_result=_previous_result(leading, servers),
                hints=_hints(services, call),
            )
        )
    return cards
