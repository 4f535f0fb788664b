"""uvicorn with a draining SIGTERM: readiness fails, in-flight work finishes, then it exits."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import socket
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import structlog
import uvicorn
from fastapi import FastAPI

from gateway.shutdown import Drain
from server.workers import Supervisor

log = structlog.get_logger("server.serve")
YOUNG_OBJECTS_BEFORE_COLLECTION = 10_000


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
        # The collector runs when the tracked objects allocated since its last run, net of those
        # freed, pass its first threshold (700). The requests in flight hold more than that
        # between them, so under load it ran thousands of times a second, each time walking
        # them all: about 8 % of the CPU per request. Nearly all of a request's objects are
        # freed by reference counting, never by the collector; at 10,000 it runs a few times a
        # minute, and the cycles it finds wait at most that long (docs/performance.md).
        gc.set_threshold(YOUNG_OBJECTS_BEFORE_COLLECTION)
        if sockets is not None and not self.should_exit:
            log.info("worker_ready", pid=os.getpid())

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


def _config(app: FastAPI | None, host: str, port: int) -> uvicorn.Config:
    return uvicorn.Config(
        app or FastAPI(),
        host=host,
        port=port,
        loop="uvloop",
        http="httptools",
        access_log=False,  # the gateway logs one structured line per request itself
        # The app applies `forwarded_allow_ips` itself (gateway/forwarded.py); uvicorn's default
        # would believe X-Forwarded-For from 127.0.0.1 or FORWARDED_ALLOW_IPS before it.
        proxy_headers=False,
        log_config=None,
        # A backstop only: the drain has already ended every request by the time uvicorn stops.
        timeout_graceful_shutdown=10,
    )


def serve(app: FastAPI, drain: Drain, host: str, port: int) -> None:
    DrainingServer(_config(app, host, port), drain).run()


def serve_workers(
    build_app: Callable[[], FastAPI], host: str, port: int, workers: int, metrics_dir: Path
) -> int:
    """One listening socket, ``workers`` processes accepting on it, each building its own app
    after the fork (no event loop, pool or connection crosses a fork)."""
    from prometheus_client import multiprocess

    sock = _config(None, host, port).bind_socket()

    def run_worker(listening: socket.socket) -> None:
        app = build_app()
        server = DrainingServer(_config(app, host, port), app.state.drain)
        server.run(sockets=[listening])

    def worker_exited(pid: int) -> None:
        # Its live gauges (in-flight requests, draining) stop counting; its counters stay.
        multiprocess.mark_process_dead(pid, str(metrics_dir))  # type: ignore[no-untyped-call]

    try:
        return Supervisor(run_worker, sock, workers, worker_exited).run()
    finally:
        sock.close()
