"""Instructions the gateway executes per request, counted by valgrind's callgrind.

CPU time per request moves with the machine's speed and whatever else runs on it (on the shared
VMs this project is measured on, by 20 % within half an hour); the instructions executed for a
fixed amount of work do not. So a change too small to see in `bench.run`'s CPU per request is
judged here, before against after (docs/performance.md, "How to profile"):

    python -m bench.instructions [--modes whole stream] [--requests 1280]

The gateway is served as in `bench.run` (auth, limits, usage recording, the log line) in front
of the nginx mock, under callgrind with instrumentation off until it has warmed up; then a
fixed number of requests at concurrency 64 over kept-alive connections, and the instructions of
the whole process (its threads included) divided by them. About two minutes a mode. Needs
valgrind (Debian's package), nginx and wrk (`make bench-tools`).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bench import load, targets

UPSTREAM_PORT = 18091
GATEWAY_PORT = 18092
CONCURRENCY = 64
WARMUP_REQUESTS = 640


@dataclass(frozen=True)
class Count:
    mode: str
    requests: int
    instructions: int

    @property
    def per_request(self) -> float:
        return self.instructions / self.requests


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", nargs="+", choices=["whole", "stream"], default=["whole"])
    parser.add_argument("--requests", type=int, default=1280, help="counted, per mode")
    return parser.parse_args(argv)


def total_instructions(dump: str) -> int:
    """A callgrind output file's count: its ``totals:`` line at the end, or its ``summary:`` line
    at the top (a dump on request writes 0 there and the count at the end)."""
    counts = [
        int(line.split()[1])
        for line in dump.splitlines()
        if line.startswith(("totals:", "summary:"))
    ]
    if not counts:
        raise ValueError("no totals in the callgrind output")
    return max(counts)


def _callgrind(pid: int, *arguments: str) -> None:
    subprocess.run(["callgrind_control", *arguments, str(pid)], check=True, capture_output=True)


def count(mode: str, requests: int, workdir: Path) -> Count:
    out = workdir / f"callgrind-{mode}.out"
    under = [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",  # start-up at near native speed, and not counted
        f"--callgrind-out-file={out}",
        sys.executable,
    ]
    upstream = f"http://127.0.0.1:{UPSTREAM_PORT}"
    url = f"http://127.0.0.1:{GATEWAY_PORT}/v1/chat/completions"
    body = load.request_body("bench" if mode == "whole" else "bench-stream", mode == "stream")
    with targets.nginx(workdir, UPSTREAM_PORT):
        config = targets.gateway_config(workdir, upstream)
        env = {"BENCH_UPSTREAM_KEY": "sk-upstream"}
        with targets.serve_gateway(workdir, GATEWAY_PORT, config, env, under=under) as (pid, key):
            load.post_exactly(url, key, body, CONCURRENCY, WARMUP_REQUESTS)
            _callgrind(pid, "--instr=on")
            load.post_exactly(url, key, body, CONCURRENCY, requests)
            _callgrind(pid, "--instr=off")
            _callgrind(pid, "--dump")
    dumps = [total_instructions(path.read_text()) for path in workdir.glob(f"{out.name}*")]
    return Count(mode, requests // CONCURRENCY * CONCURRENCY, max(dumps))


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    for mode in args.modes:
        with tempfile.TemporaryDirectory(prefix="bench-instructions-") as workdir:
            result = count(mode, args.requests, Path(workdir))
        print(
            f"{result.mode}: {result.per_request:,.0f} instructions per request "
            f"({result.instructions:,} over {result.requests:,} requests at {CONCURRENCY})"
        )


if __name__ == "__main__":
    main()
