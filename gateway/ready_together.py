"""A streamed body's chunks that are ready together, sent as one write.

An upstream read often carries several events (a fast model, a busy server, a mock in a
benchmark), and each became its own ASGI message: a trip through every middleware's ``send``
and a ``write`` system call each, a quarter of a stream's CPU (docs/performance.md). Here the
body is read step by step, and a step that completes without waiting adds its chunk to those
held; held chunks go out together the moment a step would wait (or at the end), so nothing is
held back while the body waits for more: a chunk's timing is kept, only its company changes.

Whether a step would wait is known only by running it: the body's next ``__anext__`` is driven
by hand until it either returns (ready) or hands the task a future to wait on. In the second
case the held chunks are sent first, then the rest of the step is awaited as ``await`` would
have (``_Rest``). An exception raised while sending them (the caller gone, a deadline's cancel)
is delivered to the step in progress as if it had arrived in its wait, so every layer of the
body sees and settles it, and is then raised here.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Generator
from typing import Any

from starlette.types import Send

# A burst larger than this goes out without waiting for the body to pause.
MAX_HELD_BYTES = 64 * 1024


async def send_ready_together(body: AsyncIterator[bytes], send: Send) -> None:
    """Each of ``body``'s chunks as ``http.response.body`` messages (more to come), those that
    were ready together joined into one."""
    held = _Held(send)
    while True:
        step = body.__anext__().__await__()
        try:
            waiting_on = step.send(None)
        except StopIteration as ready:
            await held.add(ready.value)
            continue
        except StopAsyncIteration:
            break
        except BaseException:
            await held.flush()  # what came before the failure goes out, as one by one it would
            raise
        try:
            await held.flush()
        except BaseException as exc:
            await _settle(step, waiting_on, exc)
            raise
        try:
            await held.add(await _Rest(step, waiting_on))
        except StopAsyncIteration:
            break
    await held.flush()


class _Held:
    __slots__ = ("_chunks", "_send", "_size")

    def __init__(self, send: Send) -> None:
        self._send = send
        self._chunks: list[bytes] = []
        self._size = 0

    async def add(self, chunk: bytes) -> None:
        self._chunks.append(chunk)
        self._size += len(chunk)
        if self._size >= MAX_HELD_BYTES:
            await self.flush()

    async def flush(self) -> None:
        chunks = self._chunks
        if not chunks:
            return
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        self._chunks = []
        self._size = 0
        await self._send({"type": "http.response.body", "body": body, "more_body": True})


async def _settle(step: Generator[Any, Any, bytes], waiting_on: Any, exc: BaseException) -> None:
    """The step in progress, told of ``exc`` and run to its end (whatever it ends with: the
    caller raises ``exc`` itself)."""
    with contextlib.suppress(BaseException):  # what matters is the caller's own exception
        await _Rest(step, waiting_on, thrown=exc)


class _Rest:
    """The rest of an ``await`` whose first step has run: what it waits on goes to the task, and
    what the task sends or throws back goes to it, as ``await`` does."""

    __slots__ = ("_step", "_thrown", "_waiting_on")

    def __init__(
        self,
        step: Generator[Any, Any, bytes],
        waiting_on: Any,
        thrown: BaseException | None = None,
    ) -> None:
        self._step = step
        self._waiting_on = waiting_on
        self._thrown = thrown

    def __await__(self) -> Generator[Any, Any, bytes]:
        step = self._step
        try:
            signal = self._waiting_on if self._thrown is None else step.throw(self._thrown)
            while True:
                try:
                    reply = yield signal
                except BaseException as exc:  # a cancellation, or anything thrown into a wait
                    signal = step.throw(exc)
                else:
                    signal = step.send(reply)
        except StopIteration as done:
            result: bytes = done.value
            return result
