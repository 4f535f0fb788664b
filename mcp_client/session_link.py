"""One MCP session held open in its own task (anyio scopes must exit in the task that entered them).

A link is one ``initialize``d session over one transport connection. When the server forgets the
session (a restart), the backend opens a new link; the old one is closed and never reused.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp import ClientSession
from mcp.client.auth import OAuthFlowError
from mcp.client.session import ElicitationFnT, MessageHandlerFnT
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher

from mcp_client.backend import BackendUnavailable
from mcp_client.failures import describe_failure
from mcp_client.http_watch import HTTPWatch, describe_refusal

# Opens the transport's (read, write) streams; HTTP transports report refusals to the watch.
StreamsOpener = Callable[[HTTPWatch], AbstractAsyncContextManager[Any]]
_CLOSE_GRACE_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class SessionOptions:
    """What every session of one backend is opened with."""

    client_info: types.Implementation
    on_message: MessageHandlerFnT
    on_elicitation: ElicitationFnT


class SessionLink:
    def __init__(
        self, open_streams: StreamsOpener, options: SessionOptions, on_lost: Callable[[], None]
    ) -> None:
        self.watch = HTTPWatch()
        self.session: ClientSession | None = None
        # Kept so task-augmented calls can send what the SDK's typed layer does not accept yet.
        self.dispatcher: JSONRPCDispatcher | None = None
        self._open_streams = open_streams
        self._options = options
        self._on_lost = on_lost
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._failure: BaseException | None = None
        self._marked_lost = False

    @property
    def lost(self) -> bool:
        """The session ended without being closed (the server went away or refused it)."""
        ended = self._task is not None and self._task.done() and not self._stop.is_set()
        return self._marked_lost or ended

    def mark_lost(self) -> None:
        """A request saw the connection close; do not wait for the session task to notice."""
        self._marked_lost = True

    def reason(self) -> str:
        """Why the session could not be opened or was lost: an authorization failure or a
        missing secret says most; then how the server refused us; then whatever failed."""
        failure = self._failure
        while isinstance(failure, BaseExceptionGroup) and len(failure.exceptions) == 1:
            failure = failure.exceptions[0]
        if isinstance(failure, OAuthFlowError | BackendUnavailable):
            return describe_failure(failure)
        if self.watch.last is not None:
            return describe_refusal(self.watch.last)
        return describe_failure(self._failure)

    async def open(self) -> None:
        """Connect and initialize; raises BackendUnavailable with the reason when that fails."""
        self._task = asyncio.create_task(self._hold())
        ready = asyncio.create_task(self._ready.wait())
        try:
            await asyncio.wait({ready, self._task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ready.cancel()
        if not self._ready.is_set():
            raise BackendUnavailable(self.reason())

    async def _hold(self) -> None:
        try:
            async with self._open_streams(self.watch) as (read, write):
                dispatcher = JSONRPCDispatcher(read, write)
                async with ClientSession(
                    dispatcher=dispatcher,
                    client_info=self._options.client_info,
                    message_handler=self._options.on_message,
                    elicitation_callback=self._options.on_elicitation,
                ) as session:
                    await session.initialize()
                    self.session, self.dispatcher = session, dispatcher
                    self._ready.set()
                    await self._stop.wait()
        except Exception as exc:  # the transport's failure is reported, not raised to the catalog
            self._failure = exc
        finally:
            self.session = self.dispatcher = None
            if self._ready.is_set() and not self._stop.is_set():
                self._on_lost()

    async def close(self) -> None:
        self._stop.set()
        task = self._task
        if task is None:
            return
        if self._ready.is_set():
            # A polite close (stdio: end the child; HTTP: end the session) but never a hang.
            await asyncio.wait({task}, timeout=_CLOSE_GRACE_SECONDS)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
