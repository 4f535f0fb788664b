"""What a running call tells its turn: the MCP client's per-call hooks, turned into turn events.

Progress (and a task's status) becomes ``tool_call.progress``. A server's request for input is
declined unless the conversation's model forwards it (``forward_elicitation``); then it becomes
``tool_call.input_required``, waits for the caller's answer through the database (any replica
may take it) until the input timeout or the call's own end, and ``tool_call.input_answered``
says what the server was told.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timedelta

from chat_service.events import (
    ToolCallInputAnswered,
    ToolCallInputRequired,
    ToolCallProgress,
    TurnEvent,
)
from chat_service.tool_call_view import ToolCallView
from chat_service.tool_inputs import InputState, ToolInputs
from db.base import utcnow
from mcp_client.hooks import CallHooks, InputAnswer, InputHook, InputRequest, ToolProgress

# Where a running call's events go: the turn yields (and stores) them as they come.
Emit = Callable[[TurnEvent], None]


def _never(model: str) -> bool:
    return False


class _Throttle:
    """One call's progress, at most once per ``interval``: every notification is a stored event,
    and a server may send thousands. A task's status change and the last step always pass."""

    def __init__(self, interval: float) -> None:
        self._interval = interval
        self._last = float("-inf")

    def admits(self, progress: ToolProgress) -> bool:
        now = time.monotonic()
        done = progress.total is not None and (progress.progress or 0) >= progress.total
        if progress.task_status is None and not done and now - self._last < self._interval:
            return False
        self._last = now
        return True


class CallListeners:
    """Builds each call's hooks. Without ``inputs`` requests for input are always declined."""

    def __init__(
        self,
        inputs: ToolInputs | None = None,
        *,
        forwards_input: Callable[[str], bool] = _never,
        input_timeout_seconds: float = 120.0,
        progress_interval_seconds: float = 0.0,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._inputs = inputs
        self._progress_interval = progress_interval_seconds
        self._forwards = forwards_input
        self._timeout = input_timeout_seconds
        self._clock = clock

    def hooks(self, call: ToolCallView, model: str | None, limit: float, emit: Emit) -> CallHooks:
        """``limit``: the call's own timeout in seconds; a request for input waits no longer."""

        gate = _Throttle(self._progress_interval)

        async def on_progress(progress: ToolProgress) -> None:
            if not gate.admits(progress):
                return
            emit(
                ToolCallProgress(
                    record_id=call.record_id,
                    tool=call.tool_name,
                    progress=progress.progress,
                    total=progress.total,
                    message=progress.message,
                    task_status=progress.task_status,
                )
            )

        on_input = None
        if self._inputs is not None and model is not None and self._forwards(model):
            ends_at = self._clock() + timedelta(seconds=limit)
            on_input = self._forwarder(self._inputs, call, ends_at, emit)
        return CallHooks(on_progress=on_progress, on_input=on_input)

    def _forwarder(
        self, inputs: ToolInputs, call: ToolCallView, call_ends_at: datetime, emit: Emit
    ) -> InputHook:
        async def on_input(request: InputRequest) -> InputAnswer:
            expires_at = min(self._clock() + timedelta(seconds=self._timeout), call_ends_at)
            asked = await inputs.open(call, request, expires_at)
            emit(
                ToolCallInputRequired(
                    record_id=call.record_id,
                    input_id=asked.id,
                    tool=call.tool_name,
                    message=request.message,
                    mode=request.mode,
                    requested_schema=request.requested_schema,
                    url=request.url,
                    expires_at=expires_at,
                )
            )
            answered = await inputs.wait(asked)
            expired = answered.state is InputState.EXPIRED
            emit(ToolCallInputAnswered(call.record_id, asked.id, answered.action, expired))
            return InputAnswer(answered.action, answered.content)

        return on_input

    async def call_ended(self, call: ToolCallView, hooks: CallHooks) -> None:
        """What the call still asked for expires, so a late answer is refused; a call that
        could not ask (input not forwarded) costs nothing here."""
        if self._inputs is not None and hooks.on_input is not None:
            await self._inputs.close(call.record_id)
