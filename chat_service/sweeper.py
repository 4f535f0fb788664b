"""Housekeeping that keeps turns moving across restarts and replicas."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

import structlog

from chat_service.approvals import Approvals
from chat_service.config import ToolLoopSettings
from chat_service.events import TurnError, TurnFinished, TurnStatus
from chat_service.store import ConversationStatus, ConversationStore
from chat_service.tool_call_view import CallState
from chat_service.tool_calls import ToolCallStore
from chat_service.transitions import Lose, Outcome
from db.base import utcnow

log = structlog.get_logger("chat_service.sweeper")
# How long past its own timeout an `executing` call must be before no process can still run it.
_EXECUTION_GRACE = timedelta(seconds=10)


class Sweeper:
    def __init__(
        self,
        *,
        store: ConversationStore,
        calls: ToolCallStore,
        approvals: Approvals,
        settings: ToolLoopSettings,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._store = store
        self._calls = calls
        self._approvals = approvals
        self._settings = settings
        self._clock = clock

    async def sweep(self) -> set[str]:
        """One pass; returns the conversations whose paused turn can now resume."""
        resumable = await self._approvals.expire_due()
        resumable |= await self._abandon_executions()
        await self._end_stale_turns()
        return resumable

    async def expire_approvals(self) -> set[str]:
        """Expires every overdue approval; returns the conversations whose turn can resume."""
        return await self._approvals.expire_due()

    def seconds_until(self, moment: datetime) -> float:
        return max(0.0, (moment - self._clock()).total_seconds())

    async def _abandon_executions(self) -> set[str]:
        """A call left `executing` by a dead process is never run again: its outcome is unknown.

        Its turn, which that process can no longer finish, is handed back to be resumed: the
        round settles with the unknown outcome as the call's result, and the model goes on."""
        touched: set[str] = set()
        limit = (
            self._clock()
            - timedelta(seconds=self._settings.tool_timeout_seconds)
            - _EXECUTION_GRACE
        )
        for call in await self._calls.in_states([CallState.EXECUTING]):
            if call.started_at is not None and call.started_at > limit:
                continue
            text = "The gateway stopped while this tool ran; its outcome is unknown."
            unknown = Lose(ended=Outcome(text, True, self._clock()))
            moved = await self._calls.move(call.record_id, unknown)
            if moved is not None:
                log.warning(
                    "tool_call_unknown_outcome", record_id=call.record_id, tool=call.tool_name
                )
                touched.add(moved.conversation_id)
        for conversation_id in touched:
            # The dead process held the turn `running`; pausing it lets any replica resume it
            # (the move fails harmlessly when the call ran in an already paused turn).
            await self._store.move(
                conversation_id, ConversationStatus.RUNNING, ConversationStatus.AWAITING_APPROVAL
            )
        return touched

    async def _end_stale_turns(self) -> None:
        cutoff = self._clock() - timedelta(seconds=self._settings.turn_timeout_seconds)
        for conversation_id in await self._store.stale_turns(cutoff):
            if await self._store.move(
                conversation_id, ConversationStatus.RUNNING, ConversationStatus.IDLE
            ):
                log.warning("turn_abandoned", conversation_id=conversation_id)
                await self._store.add_event(
                    conversation_id, TurnError("turn_interrupted", "The turn was interrupted.")
                )
                await self._store.add_event(conversation_id, TurnFinished(TurnStatus.FAILED))
