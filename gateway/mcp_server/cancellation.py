"""Stopping calls whose client cancelled them, on a transport that keeps no sessions.

A stateless request knows nothing of the others, so a client's ``notifications/cancelled``
arrives on a fresh connection: it is matched here to the call this replica runs for the same
key under that request id. Two clients of one key may use the same id at once; such an
ambiguous cancellation is ignored rather than guessed (the call still stops when its client
goes away). A cancellation that reaches another replica finds nothing here and does nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


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

    def cancel(self, key_id: int, request_id: object) -> bool:
        """Cancels the one call running under this key and request id; False when there is
        none, or more than one."""
        running = self._calls.get((key_id, str(request_id)), [])
        if len(running) != 1:
            return False
        cancel_once(running[0])
        return True
