"""What a notification says: the JSON body, the Slack text, and the signature over it."""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime
from typing import Any

from chat_service.tool_calls import CallState, ToolCallView

# The state a call enters -> the event approvers hear about.
CALL_EVENTS = {
    CallState.AWAITING_APPROVAL: "approval.requested",
    CallState.REJECTED: "approval.decided",
    CallState.EXPIRED: "approval.expired",
}


def call_event(call: ToolCallView) -> str | None:
    if call.state is CallState.APPROVED and call.decided_by_key_id is not None:
        return "approval.decided"  # approved by a person, not let through by policy
    return CALL_EVENTS.get(call.state)


def call_data(call: ToolCallView, admin_url: str, now: datetime) -> dict[str, Any]:
    seconds_left = None
    if call.expires_at is not None and call.state is CallState.AWAITING_APPROVAL:
        seconds_left = max(0, round((call.expires_at - now).total_seconds()))
    return {
        "call": {
            "record_id": call.record_id,
            "call_id": call.call_id,
            "tool": call.tool_name,
            "server": call.server,
            "arguments": call.arguments,
            "state": call.state.value,
            "requester_key_id": call.requested_by_key_id,
            "conversation_id": call.conversation_id,
            "expires_at": call.expires_at.isoformat() if call.expires_at else None,
            "seconds_left": seconds_left,
            "decided_by_key_id": call.decided_by_key_id,
            "decision_reason": call.decision_reason,
            "admin_url": f"{admin_url.rstrip('/')}/approvals",
        }
    }


def body(delivery_id: str, event: str, data: dict[str, Any], created: datetime) -> dict[str, Any]:
    return {"id": delivery_id, "event": event, "created_at": created.isoformat(), **data}


def slack_text(payload: dict[str, Any]) -> dict[str, Any]:
    """An incoming-webhook message: what happened, to which tool, and where to decide."""
    event = payload["event"]
    call = payload.get("call")
    if call is None:
        return {"text": f"llm-gateway: {event}"}
    headline = {
        "approval.requested": "Approval requested",
        "approval.decided": f"Decided ({call['state']})",
        "approval.expired": "Approval expired",
    }.get(event, event)
    left = f", {call['seconds_left']} s left" if call.get("seconds_left") is not None else ""
    text = (
        f"*{headline}*: `{call['tool']}` (server {call['server'] or 'local'}) for key "
        f"{call['requester_key_id']}{left}. <{call['admin_url']}|Open the approval queue>"
    )
    return {"text": text}


def signature(secret: str, timestamp: str, content: bytes) -> str:
    """``sha256=<hex>`` of HMAC-SHA256 over ``<timestamp>.<body>``: the timestamp is signed, so
    a receiver that refuses old timestamps refuses replays."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + content, hashlib.sha256)
    return f"sha256={mac.hexdigest()}"
