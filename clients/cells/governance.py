"""What the coding agents' sessions left in the gateway's books: usage and cost under each one's
key, and the tools they called through ``/mcp`` in the audit log like any other call. Runs after
their cells."""

from __future__ import annotations

from typing import Any

from clients.cells import claude_code, codex
from clients.matrix import Cell, CellFailed, Context, expect
from tests.support.waiting import eventually


def _usage(context: Context) -> dict[str, dict[str, Any]]:
    """The model's usage by key name (the key's ``/mcp`` calls are rows of their own)."""
    rows = context.stack.admin("/v1/admin/usage?days=1&by=key,model")["data"]
    return {row["key_name"]: row for row in rows if row["model"] == claude_code.MODEL}


def usage_and_cost(context: Context) -> None:
    names = (claude_code.KEY, codex.KEY)

    def charged() -> bool:
        rows = _usage(context)
        return all(rows.get(name, {}).get("cost_usd", 0) > 0 for name in names)

    try:
        eventually(charged, "both agents' sessions are in usage with a cost", timeout=30)
    except AssertionError:
        raise CellFailed(f"usage by key: {_usage(context)}") from None
    rows = _usage(context)
    for name in names:
        expect(rows[name]["requests"] >= 4, f"{name}: {rows[name]}")


def audited_tool_calls(context: Context) -> None:
    stack = context.stack
    ids = {key["name"]: key["id"] for key in stack.admin("/v1/admin/keys")["data"]}
    for name in (claude_code.KEY, codex.KEY):
        proposed = stack.admin(f"/v1/admin/audit?tool=lookup&actor={ids[name]}")["data"]
        expect(bool(proposed), f"{name} proposed no lookup")
        conversation = proposed[0]["conversation_id"]
        events = stack.admin(f"/v1/admin/audit?conversation={conversation}")["data"]
        actions = [event["action"] for event in events]
        expect("tool_call.policy_checked" in actions, f"{name}: {actions}")
        expect("tool_call.succeeded" in actions, f"{name}: {actions}")


CELLS = [
    Cell(
        "Gateway",
        "Claude Code and Codex sessions: usage and cost per key",
        "/v1/admin/usage",
        usage_and_cost,
    ),
    Cell(
        "Gateway", "their `/mcp` tool calls in the audit log", "/v1/admin/audit", audited_tool_calls
    ),
]
