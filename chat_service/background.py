"""Turns that run detached from any one HTTP request, and the periodic sweeper."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Coroutine
from typing import Any

import structlog

from chat_service.events import TurnEvent
from chat_service.sweeper import Sweeper
from chat_service.turn import TurnRunner

log = structlog.get_logger("chat_service.background")
_END = object()


class BackgroundTurns:
    """Runs turns as tasks so a caller that disconnects never leaves a turn half-done."""

    def __init__(self, turns: TurnRunner) -> None:
        self._turns = turns
        self._tasks: set[asyncio.Task[None]] = set()

    def relay(self, turn: AsyncIterator[TurnEvent]) -> AsyncIterator[TurnEvent]:
        """Run ``turn`` in a task; iterate the returned stream to watch it."""
        queue: asyncio.Queue[object] = asyncio.Queue()

        async def run() -> None:
            try:
                async for event in turn:
                    queue.put_nowait(event)
            finally:
                queue.put_nowait(_END)

        self._spawn(run())

        async def watch() -> AsyncIterator[TurnEvent]:
            while (item := await queue.get()) is not _END:
                assert isinstance(item, TurnEvent)
                yield item

        return watch()

    def resume(self, conversation_id: str) -> None:
        async def run() -> None:
            async for _ in self._turns.resume(conversation_id):
                pass

        self._spawn(run())

    def start_sweeping(self, sweeper: Sweeper, every_seconds: float) -> None:
        self._spawn(self._sweep_forever(sweeper, every_seconds))

    async def _sweep_forever(self, sweeper: Sweeper, every_seconds: float) -> None:
        while True:
            try:
                for conversation_id in await sweeper.sweep():
                    self.resume(conversation_id)
            except Exception:  # keep sweeping: one bad pass must not stop expiry for good
                log.exception("sweep_failed")
            await asyncio.sleep(every_seconds)

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(self._logged(coroutine))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

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
