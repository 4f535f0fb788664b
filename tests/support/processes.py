"""Run `llm-gateway serve` as a real subprocess on 127.0.0.1 and read its log lines."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 90.0  # a loaded 2-core CI machine has taken over 30 s to start one


class GatewayProcess:
    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.url = ""

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def wait_for_line(self, pattern: str) -> re.Match[str]:
        """Block until a log line matches; fail after TIMEOUT seconds."""
        while True:
            line = self.lines.get(timeout=TIMEOUT)
            match = re.search(pattern, line)
            if match:
                return match


@contextmanager
def gateway_process(
    config: Path, environ: dict[str, str] | None = None, workers: int = 1
) -> Iterator[GatewayProcess]:
    """``workers`` is explicit: the CLI's default (the machine's CPUs) varies by machine."""
    command = [sys.executable, "-m", "server.cli", "serve", "--config", str(config)]
    process = subprocess.Popen(
        [*command, "--host", "127.0.0.1", "--port", "0", "--workers", str(workers)],
        cwd=REPO,
        env={**os.environ, "UP_KEY": "sk-test", **(environ or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    gateway = GatewayProcess(process)
    try:
        port = gateway.wait_for_line(r"Uvicorn running on http://127\.0\.0\.1:(\d+)").group(1)
        gateway.url = f"http://127.0.0.1:{port}"
        yield gateway
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(TIMEOUT)


def kill_hard(gateway: GatewayProcess) -> None:
    """SIGKILL: no shutdown code runs, as when a node dies."""
    gateway.process.kill()
    gateway.process.wait(TIMEOUT)
