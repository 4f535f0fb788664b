"""Stopping calls whose client cancelled them, on a transport that keeps no sessions.

A stateless request knows nothing of the others, so a client's ``notifications/cancelled``
arrives on a fresh connection: it is matched here to the call this replica runs for the same
key under that request id. Two clients of one key may use the same id at once; such an
ambiguous cancellation is ignored rather than guessed (the call still stops when its client
goes away). A cancellation that finds no such call here may be for a call another replica runs:
it is relayed to every replica (``CancelRelay``; through Redis when ``redis_url`` is set, which
a deployment of several replicas has for its shared limits).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from typing import Any, Protocol


def cancel_once(work: asyncio.Task[Any]) -> None:
    """A second cancel would break into the MCP client's shielded last write, the
    ``notifications/cancelled`` that tells the tool server to stop: ask only once."""
    if not work.done() and not work.cancelling():
        work.cancel()


class InFlight:
    def __init__(self) -> None:
        self._calls: dict[tuple[int, str], list[asyncio.Task[Any]]] = {}

    @contextmanager
    def running(self, key_id: int, request_id: object, work: asyncio.Task[Any]) -> Iterator[None]:
        slot = (key_id, str(request_id))
        self._calls.setdefault(slot, []).append(work)
        try:
            yield
        finally:
            left = [task for task in self._calls.get(slot, []) if task is not work]
            if left:
                self._calls[slot] = left
            else:
                self._calls.pop(slot, None)

    def cancel(self, key_id: int, request_id: object) -> int:
        """Cancels the one call running under this key and request id; how many run under
        them (none cancelled unless exactly one)."""
        running = self._calls.get((key_id, str(request_id)), [])
        if len(running) == 1:
            cancel_once(running[0])
        return len(running)


class CancelRelay(Protocol):
    """Carries a cancellation to the other replicas; each stops the call if it runs it."""

    async def publish(self, key_id: int, request_id: object) -> None: ...

    def listening(self) -> AbstractAsyncContextManager[None]:
        """Hears the other replicas' cancellations while the block runs."""
        ...


class NoRelay:
    """One replica (no ``redis_url``): there is nobody to tell."""

    async def publish(self, key_id: int, request_id: object) -> None:
        return None

    @asynccontextmanager
    async def listening(self) -> AsyncIterator[None]:
        yield
