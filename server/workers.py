"""``serve --workers N``: N forked worker processes accepting on one listening socket.

Each worker is a whole gateway (its own event loop, pools, caches and background jobs), exactly as
a replica is: everything that must be shared already goes through the database or Redis, and the
jobs that must run once take a lease there (retention, webhooks) or move rows by compare-and-set
(the sweeper), so they stay correct under N workers as under N replicas.

The supervisor (this process) only binds the socket, forks, forwards SIGTERM/SIGINT to the
workers (each drains on its own: readiness fails, in-flight work finishes) and restarts a worker
that dies while it is not stopping. Forking after the settings are loaded and before any event
loop runs keeps start cheap and shares the imported code's pages between workers.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import signal
import socket
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import structlog

log = structlog.get_logger("server.workers")
CGROUP_ROOT = Path("/sys/fs/cgroup")
# uvicorn's exit status when the app's startup fails: restarting would fail the same way.
STARTUP_FAILURE = 3


def available_cpus(cgroup_root: Path = CGROUP_ROOT) -> int:
    """The CPUs this process may use: its affinity, capped by a cgroup CPU quota (a container's
    ``--cpus`` / a pod's CPU limit), rounded up; at least 1."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    quota = cgroup_cpu_quota(cgroup_root)
    if quota is not None:
        return max(1, min(cpus or 1, math.ceil(quota)))
    return max(1, cpus or 1)


def cgroup_cpu_quota(root: Path = CGROUP_ROOT) -> float | None:
    """CPUs' worth of quota from cgroup v2 ``cpu.max`` or v1 ``cpu.cfs_quota_us``; None when
    unlimited or unknown."""
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    for folder in ("cpu", "cpu,cpuacct"):
        try:
            quota_us = int((root / folder / "cpu.cfs_quota_us").read_text())
            period_us = int((root / folder / "cpu.cfs_period_us").read_text())
        except (OSError, ValueError):
            continue
        return None if quota_us <= 0 or period_us <= 0 else quota_us / period_us
    return None


_PR_SET_PDEATHSIG = 1


def _drain_when_orphaned(supervisor: int) -> bool:
    """Ask Linux to SIGTERM this worker if the supervisor dies (SIGKILL, OOM): it then drains and
    exits rather than serve on, unsupervised. False when the supervisor is already gone."""
    if sys.platform == "linux":
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    return os.getppid() == supervisor


class Supervisor:
    """Forks ``count`` workers running ``run_worker(sock)``; returns when all have exited."""

    def __init__(
        self,
        run_worker: Callable[[socket.socket], None],
        sock: socket.socket,
        count: int,
        on_exit: Callable[[int], None] = lambda pid: None,
    ) -> None:
        self._run_worker = run_worker
        self._sock = sock
        self._count = count
        self._on_exit = on_exit
        self._workers: dict[int, int] = {}  # pid -> worker number
        self._stopping = False
        self._status = 0
        self._supervisor = os.getpid()

    def run(self) -> int:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._forward)
        for number in range(self._count):
            self._spawn(number)
        while self._workers:
            try:
                pid, status = os.wait()
            except ChildProcessError:
                break
            self._reap(pid, os.waitstatus_to_exitcode(status))
        return self._status

    def _reap(self, pid: int, code: int) -> None:
        number = self._workers.pop(pid, None)
        if number is None:
            return
        self._on_exit(pid)
        if self._stopping:
            log.info("worker_stopped", worker=number, pid=pid, exit_code=code)
            return
        log.error("worker_died", worker=number, pid=pid, exit_code=code)
        if code == STARTUP_FAILURE:
            # A worker that cannot start tells of a bad config or an unreachable dependency.
            self._status = code
            self._stop(signal.SIGTERM)
            return
        self._spawn(number)

    def _spawn(self, number: int) -> None:
        sys.stdout.flush()  # or the child would write the parent's buffered lines again
        sys.stderr.flush()
        pid = os.fork()
        if pid:
            self._workers[pid] = number
            return
        os._exit(self._child(number))

    def _child(self, number: int) -> int:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, signal.SIG_DFL)  # uvicorn installs its own when it runs
        if not _drain_when_orphaned(self._supervisor):
            return 0
        try:
            self._run_worker(self._sock)
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            traceback.print_exc()
            return 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        return 0

    def _forward(self, signum: int, frame: FrameType | None) -> None:
        self._stop(signum)

    def _stop(self, signum: int) -> None:
        self._stopping = True
        for pid in self._workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)
