"""The queue's "running" view: calls executing now, their latest progress, and what they wait for.

Read from the database, not this process: a call runs on whichever replica won it, and its
progress events are stored with the conversation's other events.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from chat_service.events import ToolCallProgress, stored_event
from chat_service.tool_call_view import CallState, ToolCallView
from chat_service.tool_inputs import InputView
from db.models import ConversationEvent
from gateway.services import Services

MAX_RUNNING = 100
_PROGRESS_ROWS = 1000  # the newest progress events of the running calls' conversations


@dataclass(frozen=True, slots=True)
class RunningCall:
    call: ToolCallView
    started_at: datetime | None
    progress: ToolCallProgress | None
    waiting_for: InputView | None  # a request for input forwarded to the caller, unanswered

    @property
    def progress_text(self) -> str:
        progress = self.progress
        if progress is None:
            return "running"
        parts: list[str] = []
        if progress.task_status:
            parts.append(f"task {progress.task_status}")
        if progress.progress is not None:
            amount = f"{progress.progress:g}"
            parts.append(f"{amount} / {progress.total:g}" if progress.total else amount)
        if progress.message:
            parts.append(progress.message)
        return " · ".join(parts) or "running"


async def running_calls(services: Services) -> list[RunningCall]:
    calls = await services.tool_calls.in_states([CallState.EXECUTING], limit=MAX_RUNNING)
    latest = await _latest_progress(services, calls)
    running = []
    for call in calls:
        waiting = await services.tool_inputs.pending(call.record_id)
        running.append(RunningCall(call, call.started_at, latest.get(call.record_id), waiting))
    return running


async def _latest_progress(
    services: Services, calls: list[ToolCallView]
) -> dict[str, ToolCallProgress]:
    conversations = {call.conversation_id for call in calls}
    if not conversations:
        return {}
    async with services.sessions() as session:
        rows = await session.scalars(
            select(ConversationEvent)
            .where(
                ConversationEvent.conversation_id.in_(conversations),
                ConversationEvent.type == "tool_call.progress",
            )
            .order_by(ConversationEvent.id.desc())
            .limit(_PROGRESS_ROWS)
        )
        latest: dict[str, ToolCallProgress] = {}
        for row in rows:
            event = stored_event(row.type, row.data)
            if isinstance(event, ToolCallProgress):
                latest.setdefault(event.record_id, event)
    return latest
