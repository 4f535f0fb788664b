"""What a notification says: the JSON body, the Slack text, and the signature over it."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from accounts.limits.budgets import BudgetAlert
from chat_service.tool_call_view import CallState, ToolCallView
from governance import PinView


@dataclass(frozen=True, slots=True)
class Requester:
    """Whose call it is, as a reviewer reads it: the key and the person or service owning it."""

    key_id: int
    name: str | None
    owner: str | None
    team: str | None


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


def call_data(
    call: ToolCallView, admin_url: str, now: datetime, requester: Requester | None = None
) -> dict[str, Any]:
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
            "requester": asdict(requester or Requester(call.requested_by_key_id, None, None, None)),
            "conversation_id": call.conversation_id,
            "expires_at": call.expires_at.isoformat() if call.expires_at else None,
            "seconds_left": seconds_left,
            "decided_by_key_id": call.decided_by_key_id,
            "decision_reason": call.decision_reason,
            "approvals_required": call.approvals_required,
            "approvals": len(call.approvals),
            "admin_url": f"{admin_url.rstrip('/')}/approvals",
        }
    }


def review_data(pin: PinView, admin_url: str) -> dict[str, Any]:
    """``tool.review_requested``: a new or changed definition waits for an admin's review."""
    return {
        "tool": {
            "review_id": pin.id,
            "name": pin.tool_name,
            "server": pin.server,
            "definition_hash": pin.definition_hash,
            "description": pin.definition.get("description"),
            "admin_url": f"{admin_url.rstrip('/')}/reviews",
        }
    }


def budget_data(alert: BudgetAlert, admin_url: str) -> dict[str, Any]:
    """``budget.threshold``: a key's or team's spend crossed 80 % or 100 % of a budget."""
    return {
        "budget": {
            "scope": alert.scope,
            "subject": alert.subject,
            "period": alert.period,
            "window": alert.window,
            "threshold": alert.threshold,
            "budget_usd": alert.budget,
            "spent_usd": round(alert.spent, 6),
            "admin_url": f"{admin_url.rstrip('/')}/usage",
        }
    }


def body(delivery_id: str, event: str, data: dict[str, Any], created: datetime) -> dict[str, Any]:
    return {"id": delivery_id, "event": event, "created_at": created.isoformat(), **data}


def slack_text(payload: dict[str, Any]) -> dict[str, Any]:
    """An incoming-webhook message: what happened, to which tool, and where to decide."""
    event = payload["event"]
    call = payload.get("call")
    if "tool" in payload:
        tool = payload["tool"]
        return {
            "text": f"*Tool review requested*: `{tool['name']}` (server {tool['server']}) "
            f"changed or is new. <{tool['admin_url']}|Review it>"
        }
    if "budget" in payload:
        spend = payload["budget"]
        whose = "key" if spend["scope"] == "key" else "team"
        return {
            "text": f"*Budget {spend['threshold']:.0%} reached*: {whose} `{spend['subject']}` "
            f"spent {spend['spent_usd']:.2f} of {spend['budget_usd']:g} USD this "
            f"{spend['period']} ({spend['window']}). <{spend['admin_url']}|Usage>"
        }
    if call is None:
        return {"text": f"llm-gateway: {event}"}
    headline = {
        "approval.requested": "Approval requested",
        "approval.decided": f"Decided ({call['state']})",
        "approval.expired": "Approval expired",
    }.get(event, event)
    left = f", {call['seconds_left']} s left" if call.get("seconds_left") is not None else ""
    requester = call.get("requester") or {}
    who = requester.get("owner") or f"key {call['requester_key_id']}"
    team = f", team {requester['team']}" if requester.get("team") else ""
    text = (
        f"*{headline}*: `{call['tool']}` (server {call['server'] or 'local'}) for "
        f"{who}{team}{left}. <{call['admin_url']}|Open the approval queue>"
    )
    return {"text": text}


def signature(secret: str, timestamp: str, content: bytes) -> str:
    """``sha256=<hex>`` of HMAC-SHA256 over ``<timestamp>.<body>``: the timestamp is signed, so
    a receiver that refuses old timestamps refuses replays."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + content, hashlib.sha256)
    return f"sha256={mac.hexdigest()}"
