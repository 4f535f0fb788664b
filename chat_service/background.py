"""Turns that run detached from any one HTTP request, and the periodic sweeper."""

from __future__ import annotations

import asyncio
import contextlib
import heapq
from collections.abc import AsyncIterator, Callable, Coroutine
from datetime import datetime
from typing import Any

import structlog

from chat_service.events import ToolCallAwaitingApproval, TurnEvent
from chat_service.sweeper import Sweeper
from chat_service.turn import TurnRunner
from db.cancellation import raise_if_cancelled

log = structlog.get_logger("chat_service.background")
_END = object()
# The event loop's clock can wake a timer a little before the wall clock says it is due.
_CLOCK_SLACK = 0.05


class BackgroundTurns:
    """Runs turns as tasks so a caller that disconnects never leaves a turn half-done.

    A turn it parks for approval is scheduled here: at the approval's expiry the call expires
    and the turn resumes at once. The sweeper, on every replica, is the backstop (e.g. when the
    replica that parked the turn is gone)."""

    def __init__(self, turns: TurnRunner) -> None:
        self._turns = turns
        self._tasks: set[asyncio.Task[None]] = set()
        self._expiries: ExpirySchedule | None = None

    def relay(self, turn: AsyncIterator[TurnEvent]) -> AsyncIterator[TurnEvent]:
        """Run ``turn`` in a task; iterate the returned stream to watch it."""
        queue: asyncio.Queue[object] = asyncio.Queue()

        async def run() -> None:
            try:
                async for event in turn:
                    self._on_event(event)
                    queue.put_nowait(event)
            finally:
                queue.put_nowait(_END)

        self._spawn(run())

        async def watch() -> AsyncIterator[TurnEvent]:
            while (item := await queue.get()) is not _END:
                assert isinstance(item, TurnEvent)
                yield item

        return watch()

    async def complete(self, turn: AsyncIterator[TurnEvent]) -> list[TurnEvent]:
        """Run ``turn`` to its end in a task, returning its events: for a caller that wants only
        the outcome, without ``relay``'s queue hand-off (a task switch per event). The caller's
        cancellation (a disconnect) leaves the turn running, as with ``relay``."""
        events: list[TurnEvent] = []

        async def run() -> None:
            async for event in turn:
                self._on_event(event)
                events.append(event)

        await asyncio.shield(self._spawn(run()))
        return events

    def resume(self, conversation_id: str) -> None:
        async def run() -> None:
            async for event in self._turns.resume(conversation_id):
                self._on_event(event)

        self._spawn(run())

    def start_sweeping(self, sweeper: Sweeper, every_seconds: float) -> None:
        self._expiries = ExpirySchedule(sweeper, self.resume)
        self._spawn(self._expiries.run())
        self._spawn(self._sweep_forever(sweeper, every_seconds))

    def _on_event(self, event: TurnEvent) -> None:
        if not isinstance(event, ToolCallAwaitingApproval) or self._expiries is None:
            return
        expires_at = event.tool_call.expires_at
        if expires_at is not None:
            self._expiries.add(expires_at)

    async def _sweep_forever(self, sweeper: Sweeper, every_seconds: float) -> None:
        while True:
            try:
                for conversation_id in await sweeper.sweep():
                    self.resume(conversation_id)
            except Exception:  # keep sweeping: one bad pass must not stop expiry for good
                raise_if_cancelled()
                log.exception("sweep_failed")
            await asyncio.sleep(every_seconds)

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.create_task(self._logged(coroutine))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    @staticmethod
    async def _logged(coroutine: Coroutine[Any, Any, None]) -> None:
        try:
            await coroutine
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("background_turn_failed")

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task


class ExpirySchedule:
    """One task per process sleeping until the earliest known approval expiry.

    A task per pending approval would hold a few kilobytes each for as long as the approval
    waits (1,000 waiting conversations, 1,000 sleeping tasks); here each costs one datetime in a
    heap. A decision before the deadline leaves the entry in place: the expiry pass then finds
    nothing due, which is cheap."""

    def __init__(self, sweeper: Sweeper, resume: Callable[[str], None]) -> None:
        self._sweeper = sweeper
        self._resume = resume
        self._due: list[datetime] = []
        self._earlier = asyncio.Event()

    def add(self, expires_at: datetime) -> None:
        if not self._due or expires_at < self._due[0]:
            self._earlier.set()
        heapq.heappush(self._due, expires_at)

    def __len__(self) -> int:
        return len(self._due)

    async def run(self) -> None:
        while True:
            self._earlier.clear()
            if not self._due:
                await self._earlier.wait()
                continue
            delay = self._sweeper.seconds_until(self._due[0]) + _CLOCK_SLACK
            try:
                await asyncio.wait_for(self._earlier.wait(), delay)
                continue  # an earlier expiry arrived: sleep until that one instead
            except TimeoutError:
                pass
            while self._due and self._sweeper.seconds_until(self._due[0]) == 0:
                heapq.heappop(self._due)
            try:
                for conversation_id in await self._sweeper.expire_approvals():
                    self._resume(conversation_id)
            except Exception:  # the sweeper retries on its next pass
                raise_if_cancelled()
                log.exception("expiry_failed")
