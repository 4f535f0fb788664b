"""Holding an MCP call while a human decides on it, telling the client it is still alive."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from time import monotonic

import anyio

from chat_service.tool_call_view import CallState, ToolCallView

# Told each time the call is found still waiting (the count of checks so far).
OnStillWaiting = Callable[[int], Awaitable[None]]
Lookup = Callable[[str], Awaitable[ToolCallView | None]]


async def wait_for_decision(
    lookup: Lookup,
    call: ToolCallView,
    *,
    wait_seconds: float,
    poll_seconds: float,
    still_waiting: OnStillWaiting,
) -> ToolCallView | None:
    """The call once it leaves ``awaiting_approval`` (decided on any replica, or expired), or
    None when ``wait_seconds`` ran out first. The decision is read from the database, so it
    reaches the replica holding the request wherever the admin took it."""
    deadline = monotonic() + wait_seconds
    checks = 0
    while True:
        current = await lookup(call.record_id)
        if current is None or current.state is not CallState.AWAITING_APPROVAL:
            return current
        remaining = deadline - monotonic()
        if remaining <= 0:
            return None
        checks += 1
        await still_waiting(checks)
        await anyio.sleep(min(poll_seconds, remaining))
