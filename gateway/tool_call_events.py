"""What the gateway says when a tool call changes state: a metric, and its own log event.

Tool calls, approval requests and decisions each get a named event, so an operator can follow a
call without reading the request log. Arguments and results are never logged: they may hold
anything a user typed.
"""

from __future__ import annotations

import structlog

from chat_service.tool_call_view import CallState, ToolCallView
from gateway.metrics import GatewayMetrics

log = structlog.get_logger("gateway.tool_calls")

_EVENTS = {
    CallState.AWAITING_APPROVAL: "approval_requested",
    CallState.APPROVED: "approval_decided",
    CallState.REJECTED: "approval_decided",
    CallState.EXPIRED: "approval_expired",
    CallState.DENIED_BY_POLICY: "tool_call_denied",
}
_WARNINGS = frozenset(
    {CallState.FAILED, CallState.TIMED_OUT, CallState.UNKNOWN_OUTCOME, CallState.DENIED_BY_POLICY}
)


def tool_call_moved(metrics: GatewayMetrics, call: ToolCallView, *, in_catalog: bool) -> None:
    metrics.observe_tool_call(call.tool_name, call.state, in_catalog=in_catalog)
    emit = log.warning if call.state in _WARNINGS else log.info
    event = _EVENTS.get(call.state, "tool_call")
    details: dict[str, object] = {}
    if call.state is CallState.APPROVED and call.decided_by_key_id is None:
        event = "tool_call"  # no approval needed: policy let it through
    elif call.state in (CallState.APPROVED, CallState.REJECTED):
        details = {"decision": call.state.value, "decided_by_key_id": call.decided_by_key_id}
    elif call.state is CallState.AWAITING_APPROVAL and call.expires_at is not None:
        details = {"expires_at": call.expires_at.isoformat()}
    elif call.state is CallState.DENIED_BY_POLICY:
        details = {"policy_reason": call.policy_reason}
    emit(
        event,
        conversation_id=call.conversation_id,
        record_id=call.record_id,
        call_id=call.call_id,
        tool=call.tool_name,
        server=call.server,
        state=call.state.value,
        requested_by_key_id=call.requested_by_key_id,
        **details,
    )
