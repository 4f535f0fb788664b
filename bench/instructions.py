"""Instructions the gateway executes per request, counted by valgrind's callgrind.

CPU time per request moves with the machine's speed and whatever else runs on it (on the shared
VMs this project is measured on, by 20 % within half an hour); the instructions executed for a
fixed amount of work do not. So a change too small to see in `bench.run`'s CPU per request is
judged here, before against after (docs/performance.md, "How to profile"):

    python -m bench.instructions [--modes whole stream] [--requests 1280] [--check | --record]

CPU per request is a no-regression goal: docs/performance.md records the figures for a whole
and a streamed request ("Recorded instruction counts"); ``--check`` (run by ``make bench``)
fails when either grows more than 5 % over its record, ``--record`` writes the new ones.

The gateway is served as in `bench.run` (auth, limits, usage recording, the log line) in front
of the nginx mock, under callgrind with instrumentation off until it has warmed up; then a
fixed number of requests at concurrency 64 over kept-alive connections, and the instructions of
the whole process (its threads included) divided by them. About two minutes a mode. Needs
valgrind (Debian's package), nginx and wrk (`make bench-tools`).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from bench import load, targets
from bench.report import git_revision

UPSTREAM_PORT = 18091
GATEWAY_PORT = 18092
CONCURRENCY = 64
WARMUP_REQUESTS = 640
RECORD = Path(__file__).resolve().parent.parent / "docs" / "performance.md"
# How much more a request may cost than its record before ``--check`` fails: runs on the same
# code agree within about 2 %, so 5 % is a change, not noise.
TOLERANCE = 0.05
_BEGIN, _END = "<!-- bench.instructions record -->", "<!-- end of record -->"
_ROW = re.compile(r"^\| (whole|stream) \| ([\d,]+) \|", re.MULTILINE)


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
    action = parser.add_mutually_exclusive_group()
    action.add_argument(
        "--check", action="store_true", help=f"fail past {TOLERANCE:.0%} over the record"
    )
    action.add_argument("--record", action="store_true", help="write the counts as the record")
    return parser.parse_args(argv)


def recorded(document: str) -> dict[str, int]:
    """The recorded instructions per request, by mode, from docs/performance.md's record."""
    begin, end = document.find(_BEGIN), document.find(_END)
    if begin < 0 or end < begin:
        raise ValueError(f"no record between {_BEGIN} and {_END}")
    return {
        mode: int(figure.replace(",", "")) for mode, figure in _ROW.findall(document[begin:end])
    }


def with_record(document: str, counts: dict[str, int], note: str) -> str:
    """The document with its record replaced by ``counts`` (modes not counted keep theirs)."""
    merged = {**recorded(document), **counts}
    rows = "".join(f"| {mode} | {merged[mode]:,} |\n" for mode in ("whole", "stream"))
    table = f"{_BEGIN}\n| mode | instructions per request |\n|---|---:|\n{rows}{note}\n"
    begin, end = document.index(_BEGIN), document.index(_END)
    return document[:begin] + table + document[end:]


def regressions(counts: dict[str, int], record: dict[str, int]) -> list[str]:
    """A line per mode whose count is more than ``TOLERANCE`` over its record."""
    return [
        f"{mode}: {count:,} instructions per request, {count / record[mode] - 1:+.1%} over the "
        f"recorded {record[mode]:,} (limit +{TOLERANCE:.0%})"
        for mode, count in counts.items()
        if count > record[mode] * (1 + TOLERANCE)
    ]


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


def _patient(config: Path) -> None:
    """Timeouts for a gateway slowed some fifty times: at 64 streams on a busy machine a new
    upstream connection took longer than the default 5 s to be seen open, and the count stopped
    on a 504. The timeouts' values change no work the gateway does."""
    settings = yaml.safe_load(config.read_text())
    for model in settings["models"]:
        model["timeouts"] = {"connect": 120, "first_byte": 300, "read": 300}
    config.write_text(yaml.safe_dump(settings))


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
        _patient(config)
        env = {"BENCH_UPSTREAM_KEY": "sk-upstream"}
        with targets.serve_gateway(workdir, GATEWAY_PORT, config, env, under=under) as (pid, key):
            load.post_exactly(url, key, body, CONCURRENCY, WARMUP_REQUESTS)
            _callgrind(pid, "--instr=on")
            load.post_exactly(url, key, body, CONCURRENCY, requests)
            _callgrind(pid, "--instr=off")
            _callgrind(pid, "--dump")
    dumps = [total_instructions(path.read_text()) for path in workdir.glob(f"{out.name}*")]
    return Count(mode, requests // CONCURRENCY * CONCURRENCY, max(dumps))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    counts: dict[str, int] = {}
    for mode in args.modes:
        with tempfile.TemporaryDirectory(prefix="bench-instructions-") as workdir:
            result = count(mode, args.requests, Path(workdir))
        counts[mode] = round(result.per_request)
        print(
            f"{result.mode}: {result.per_request:,.0f} instructions per request "
            f"({result.instructions:,} over {result.requests:,} requests at {CONCURRENCY})"
        )
    document = RECORD.read_text(encoding="utf-8")
    if args.record:
        revision = git_revision(RECORD.parent.parent)
        note = f"({args.requests:,} requests a mode at concurrency {CONCURRENCY}, on {revision})"
        RECORD.write_text(with_record(document, counts, note), encoding="utf-8")
        print(f"recorded in {RECORD}")
    if args.check:
        failed = regressions(counts, recorded(document))
        for line in failed:
            print(f"REGRESSION {line}", file=sys.stderr)
        if failed:
            return 1
        print(f"within {TOLERANCE:.0%} of the record in {RECORD.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
