"""CPU time, time runnable but waiting for a CPU, and resident memory of a process and all its
descendants, read from /proc."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants (uvicorn and LiteLLM may fork workers)."""
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*/children"):
            try:
                queue += [int(child) for child in task.read_text().split()]
            except OSError:
                continue
    return found


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    # utime and stime are fields 14 and 15 of stat; index 11 and 12 after the command name.
    return (int(fields[11]) + int(fields[12])) / _TICKS


def _run_delay_seconds(pid: int) -> float:
    """Time the process's threads were ready to run but waited for a CPU (schedstat's second
    field, nanoseconds): on a shared machine, what throughput loses to other processes."""
    total = 0
    for task in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        try:
            total += int(task.read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total / 1e9


def _rss_bytes(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE
    except OSError:
        return 0


@dataclass(frozen=True)
class Sample:
    cpu_seconds: float
    rss_mb: float
    run_delay_seconds: float = 0.0


def sample(pid: int) -> Sample:
    pids = tree(pid)
    return Sample(
        cpu_seconds=sum(_cpu_seconds(p) for p in pids),
        rss_mb=sum(_rss_bytes(p) for p in pids) / 2**20,
        run_delay_seconds=sum(_run_delay_seconds(p) for p in pids),
    )
