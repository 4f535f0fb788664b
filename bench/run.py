"""Our gateway, LiteLLM's proxy and the bare upstream, side by side on one machine.

    make bench                       # everything, about 8 minutes on 2 cores
    .venv/bin/python -m bench.run --targets gateway --duration 5 --no-mcp   # quick iteration
    .venv/bin/python -m bench.mcp    # the MCP tool round trip alone, printed

Writes docs/benchmarks.md (or --output) and the raw numbers next to it as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict
from pathlib import Path

from bench import conversation, load, mcp, procstat, targets, waiting
from bench.report import Results, Row, TargetExtras, document, git_revision
from server.workers import available_cpus

# gateway-workers: `serve --workers N`, N the CPUs this machine lets it use.
TARGETS = ("upstream", "gateway", "gateway-workers", "litellm")
MODES = ("whole", "stream")
STREAM_MODELS = {"whole": "bench", "stream": "bench-stream"}
UPSTREAM_PATHS = {"whole": "whole", "stream": "stream"}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench", description=__doc__.splitlines()[0])
    parser.add_argument("--targets", nargs="+", choices=TARGETS, default=list(TARGETS))
    parser.add_argument("--concurrency", nargs="+", type=int, default=[1, 16, 64])
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--duration", type=float, default=8.0, help="seconds per measured run")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds before each run")
    parser.add_argument("--first-byte-requests", type=int, default=500)
    parser.add_argument("--streams", type=int, default=1000, help="streams held open at once")
    parser.add_argument("--port", type=int, default=18080, help="first of eight ports")
    parser.add_argument(
        "--mcp",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also measure the MCP tool round trip (bench/mcp.py)",
    )
    parser.add_argument(
        "--conversation",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also time conversation turns by history length (bench/conversation.py)",
    )
    parser.add_argument("--conversation-turns", type=int, default=conversation.Settings.turns)
    parser.add_argument(
        "--waiting",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also park conversations awaiting approval: RSS and the queue page (bench/waiting.py)",
    )
    parser.add_argument("--waiting-conversations", type=int, default=waiting.Settings.conversations)
    parser.add_argument("--mcp-calls", type=int, default=mcp.Settings.calls)
    parser.add_argument("--mcp-turns", type=int, default=mcp.Settings.turns, help="0: none")
    parser.add_argument("--output", type=Path, default=targets.ROOT / "docs" / "benchmarks.md")
    parser.add_argument("--litellm-venv", type=Path, default=targets.ROOT / "var/bench/litellm")
    parser.add_argument(
        "--profile", type=Path, help="also record a py-spy flame graph of the gateway here"
    )
    args = parser.parse_args(argv)
    if max(args.concurrency) > 2000 or args.duration > 60 or args.streams > 5000:
        parser.error("keep runs bounded: concurrency <= 2000, duration <= 60 s, streams <= 5000")
    if args.conversation_turns > 5000:
        parser.error("keep runs bounded: --conversation-turns <= 5000")
    if not 1 <= args.waiting_conversations <= 10_000:
        parser.error("keep runs bounded: 1 <= --waiting-conversations <= 10000")
    if args.mcp_calls > 100_000 or args.mcp_turns > 10_000:
        parser.error("keep runs bounded: --mcp-calls <= 100000, --mcp-turns <= 10000")
    return args


class Bench:
    def __init__(self, args: argparse.Namespace, upstream: str) -> None:
        self.args = args
        self.upstream = upstream
        self.results = Results()

    def url(self, name: str, port: int) -> str:
        if name == "upstream":
            return f"{self.upstream}/{{path}}/v1/chat/completions"
        return f"http://127.0.0.1:{port}/v1/chat/completions"

    def load(self, name: str, url: str, auth: str, pid: int) -> None:
        for mode in self.args.modes:
            target_url = url.format(path=UPSTREAM_PATHS[mode])
            body = load.request_body(STREAM_MODELS[mode], mode == "stream")
            for connections in self.args.concurrency:
                load.run_wrk(target_url, auth, body, connections, self.args.warmup)
                before = procstat.sample(pid)
                result = load.run_wrk(target_url, auth, body, connections, self.args.duration)
                after = procstat.sample(pid)
                served = max(result.requests, 1)
                cpu = (after.cpu_seconds - before.cpu_seconds) * 1000 / served
                # Busy: the share of the run the gateway computed; waiting: ready to, but
                # another process had the CPU (the shared machine, nginx, wrk).
                busy = (after.cpu_seconds - before.cpu_seconds) / self.args.duration
                waited = (after.run_delay_seconds - before.run_delay_seconds) * 1000 / served
                load_average = os.getloadavg()[0]
                row = Row(name, mode, connections, result, cpu, after.rss_mb, load_average)
                self.results.rows.append(row)
                print(
                    f"{name:9} {mode:6} c={connections:<3} {result.rps:8.0f} req/s "
                    f"p50 {result.p50_ms:.2f} p99 {result.p99_ms:.2f} ms, "
                    f"{cpu:.2f} CPU ms/req (busy {busy:.0%}, waited for a CPU "
                    f"{waited:.2f} ms/req), {after.rss_mb:.0f} MB, wrk "
                    f"{result.wrk_cpu_seconds * 1000 / max(result.requests, 1):.3f} CPU ms/req",
                    flush=True,
                )

    def extras(self, name: str, url: str, auth: str, pid: int) -> None:
        extra = self.results.extras.setdefault(name, TargetExtras())
        stream_url = url.format(path="stream")
        body = load.request_body("bench-stream", stream=True)
        count = self.args.first_byte_requests
        load.first_byte_ms(stream_url, auth, body, min(count, 50))  # warm the connections
        extra.first_byte_p50_ms, extra.first_byte_p99_ms = load.first_byte_ms(
            stream_url, auth, body, count
        )
        if name == "upstream" or not self.args.streams:
            return
        hold_body = load.request_body("bench-hold", stream=True)
        extra.streams_open, extra.streams_rss_mb = load.hold_streams(
            url.format(path="hold"),
            auth,
            hold_body,
            self.args.streams,
            timeout=75,
            measure=lambda: procstat.sample(pid).rss_mb,
        )
        print(f"{name}: {extra}", flush=True)

    def measure(self, name: str, port: int, auth: str, pid: int) -> None:
        extra = self.results.extras.setdefault(name, TargetExtras())
        extra.idle_rss_mb = procstat.sample(pid).rss_mb
        url = self.url(name, port)
        with self._profiled(name, pid):
            self.load(name, url, auth, pid)
        self.extras(name, url, auth, pid)

    @contextmanager
    def _profiled(self, name: str, pid: int) -> Iterator[None]:
        if name != "gateway" or self.args.profile is None:
            yield
            return
        spy = Path(sys.executable).with_name("py-spy")
        command = [str(spy), "record", "-p", str(pid), "-o", str(self.args.profile)]
        formats = {".json": "speedscope", ".txt": "raw"}
        fmt = formats.get(self.args.profile.suffix, "flamegraph")
        command += ["--format", fmt]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            yield
        finally:
            process.send_signal(2)  # SIGINT: py-spy writes its output and exits
            process.wait(timeout=60)


def _versions(venv: Path | None) -> dict[str, str]:
    def first_line(command: list[str]) -> str:
        completed = subprocess.run(command, capture_output=True, text=True, check=False)
        return (completed.stdout or completed.stderr).strip().splitlines()[0]

    versions = {
        "llm-gateway": git_revision(targets.ROOT),
        "nginx": first_line(["nginx", "-v"]).rsplit("/", 1)[-1],
        "wrk": first_line(["wrk", "--version"]).split()[1],
    }
    if venv is not None:
        versions["litellm"] = targets.litellm_installed_version(venv)
    return versions


def _need(tool: str, package: str) -> None:
    if shutil.which(tool) is None:
        sys.exit(f"`{tool}` is missing: apt-get install {package}")


def run(args: argparse.Namespace) -> Results:
    _need("nginx", "nginx-light")
    _need("wrk", "wrk")
    venv = targets.litellm_venv(args.litellm_venv) if "litellm" in args.targets else None
    ports = args.port, args.port + 1, args.port + 5, args.port + 2
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        workdir = Path(tmp)
        upstream = f"http://127.0.0.1:{ports[0]}"
        with targets.nginx(workdir, ports[0]) as nginx:
            bench = Bench(args, upstream)
            bench.results.versions = _versions(venv)
            bench.results.settings = (
                f"{args.duration:g} s per run after {args.warmup:g} s warm-up, "
                f"concurrency {', '.join(map(str, args.concurrency))}"
            )
            starters: dict[str, Callable[[], AbstractContextManager[tuple[int, str]]]] = {
                "gateway": lambda: targets.gateway(workdir, ports[1], upstream),
                "gateway-workers": lambda: targets.gateway(
                    workdir, ports[2], upstream, available_cpus()
                ),
                "litellm": lambda: _litellm(workdir, ports[3], upstream, venv),
            }
            for name in args.targets:
                if name == "upstream":
                    bench.measure(name, ports[0], "none", nginx.pid)
                    continue
                with starters[name]() as (pid, key):
                    bench.measure(name, ports[TARGETS.index(name)], key, pid)
    if args.conversation:
        turns = conversation.Settings(turns=args.conversation_turns, port=args.port + 6)
        bench.results.conversation = conversation.measure(turns)
        bench.results.settings += (
            f"; conversations: {turns.turns} timed turns of each kind, "
            f"{turns.history}-turn history for the long ones"
        )
    if args.waiting:
        parked = waiting.Settings(conversations=args.waiting_conversations, port=args.port + 7)
        bench.results.waiting = waiting.measure(parked)
        bench.results.settings += (
            f"; waiting: {parked.conversations:,} conversations, {parked.loads} queue page loads"
        )
    if args.mcp:
        settings = mcp.Settings(calls=args.mcp_calls, turns=args.mcp_turns, port=args.port + 3)
        bench.results.mcp, bench.results.mcp_turns = mcp.measure(settings)
        bench.results.settings += (
            f"; MCP: {settings.calls:,} calls per client after {settings.warmup} warm-up calls, "
            f"concurrency {', '.join(map(str, settings.concurrency))}; "
            f"{settings.turns} API turns of each kind"
        )
    return bench.results


@contextmanager
def _litellm(
    workdir: Path, port: int, upstream: str, venv: Path | None
) -> Iterator[tuple[int, str]]:
    assert venv is not None
    with targets.litellm(workdir, port, upstream, venv) as pid:
        yield pid, targets.LITELLM_MASTER_KEY


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    results = run(args)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(document(results))
    raw = args.output.with_suffix(".json")
    raw.write_text(json.dumps(asdict(results), indent=1, default=str))
    print(f"wrote {args.output} and {raw}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
