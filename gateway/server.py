"""uvicorn with a draining SIGTERM: readiness fails, in-flight work finishes, then it exits."""

from __future__ import annotations

import asyncio
import gc
import signal
import socket
from types import FrameType

import uvicorn
from fastapi import FastAPI

from gateway.shutdown import Drain


class DrainingServer(uvicorn.Server):
    """The first SIGTERM drains before uvicorn's own shutdown; a second signal stops at once."""

    def __init__(self, config: uvicorn.Config, drain: Drain) -> None:
        super().__init__(config)
        self.drain = drain
        self._loop: asyncio.AbstractEventLoop | None = None
        self._drain_task: asyncio.Task[None] | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        await super().startup(sockets)
        # Everything built so far (modules, SDK classes, the app) lives as long as the process:
        # out of the collector's sight, a full collection no longer walks the whole heap, which
        # showed as the slowest requests' stall.
        gc.freeze()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if sig != signal.SIGTERM or self._loop is None or self.drain.draining:
            super().handle_exit(sig, frame)
            return
        # Signal handlers run between bytecodes; hand the work to the loop rather than do it here.
        self.drain.draining = True
        self._loop.call_soon_threadsafe(self._start_drain)

    def _start_drain(self) -> None:
        self._drain_task = asyncio.create_task(self._drain_then_exit(), name="drain")

    async def _drain_then_exit(self) -> None:
        await self.drain.run()
        self.should_exit = True


def serve(app: FastAPI, drain: Drain, host: str, port: int) -> None:
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        loop="uvloop",
        http="httptools",
        access_log=False,  # the gateway logs one structured line per request itself
        log_config=None,
        # A backstop only: the drain has already ended every request by the time uvicorn stops.
        timeout_graceful_shutdown=10,
    )
    DrainingServer(config, drain).run()
