"""Many conversations waiting for approval at once: the gateway's memory and the queue page.

    .venv/bin/python -m bench.waiting                    # 1,000 waiting, printed
    .venv/bin/python -m bench.waiting --conversations 200

``llm-gateway serve --workers 1`` (SQLite, a real key) with mcp-server-time over stdio, whose
``get_current_time`` requires approval, and a scripted mock model that calls it. Each of
``--conversations`` conversations is created and sent one message through the native API
(32 at a time); the turn stops at the held call, so every one of them ends up waiting for a
decision. Recorded: the gateway's RSS before (idle, after a warm-up turn) and with all of them
waiting, and the admin approval queue page (``GET /admin``, signed in with an ``admin`` key)
loaded ``--loads`` times one after another: its latency and the gateway's CPU per load.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import yaml

from bench import procstat, targets
from bench.stats import percentile

MODEL = "waits"
SERVER = "time"
TOOL = "get_current_time"
CONCURRENCY = 32
TIMEOUT = 60.0
CSRF_FIELD = re.compile(r'name="csrf_token" value="([^"]+)"')


@dataclass(frozen=True)
class WaitingRow:
    conversations: int  # waiting for approval when measured
    waiting: int  # of those, the ones whose turn really stopped at a held call
    rss_idle_mb: float
    rss_waiting_mb: float
    park_seconds: float  # to create and park all of them
    loads: int
    page_p50_ms: float
    page_p90_ms: float
    page_cpu_ms: float  # the gateway process tree's CPU per timed load
    page_kb: float
    load_average: float


@dataclass(frozen=True)
class Settings:
    conversations: int = 1000
    loads: int = 10
    port: int = 18700


def write_config(workdir: Path) -> Path:
    server = {
        "name": SERVER,
        "transport": "stdio",
        "command": "mcp-server-time",
        "args": ["--local-timezone", "UTC"],
        "roles": ["user"],
        "trusted": True,
        "requires_approval": True,
    }
    call = {"name": TOOL, "arguments": {"timezone": "UTC"}}
    model = {
        "name": MODEL,
        "provider": "mock",
        "script": [{"tool_calls": [call]}, {"text": "It is {last_tool_result}"}],
    }
    config = {
        "database_url": f"sqlite+aiosqlite:///{workdir}/gateway.db",
        "log_level": "warning",
        "models": [model],
        "mcp_servers": [server],
    }
    path = workdir / "gateway.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _admin_key(config: Path) -> str:
    cli = str(Path(sys.executable).with_name("llm-gateway"))
    command = [cli, "keys", "create", "--name", "bench-admin", "--role", "admin"]
    created = subprocess.run(
        [*command, "--config", str(config)], check=True, capture_output=True, text=True
    )
    return created.stdout.strip().splitlines()[-1]


def _wait_for_tool(client: httpx.Client, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(tool["name"] == TOOL for tool in client.get("/v1/tools").json()["data"]):
            return
        time.sleep(0.2)
    raise TimeoutError(f"the gateway did not list {TOOL} within {timeout} s")


async def _park(client: httpx.AsyncClient, gate: asyncio.Semaphore) -> bool:
    """One conversation left waiting for a decision; True when its turn stopped at a held call."""
    async with gate:
        created = await client.post("/v1/conversations", json={"model": MODEL})
        created.raise_for_status()
        path = f"/v1/conversations/{created.json()['id']}/messages"
        turn = await client.post(path, json={"content": "What time is it?"})
    if turn.status_code != 200:
        return False
    return any(call["state"] == "awaiting_approval" for call in turn.json()["tool_calls"])


async def park_all(base_url: str, key: str, count: int) -> int:
    gate = asyncio.Semaphore(CONCURRENCY)
    headers = {"Authorization": f"Bearer {key}"}
    limits = httpx.Limits(max_connections=CONCURRENCY)
    async with httpx.AsyncClient(
        base_url=base_url, headers=headers, timeout=TIMEOUT, limits=limits
    ) as client:
        parked = await asyncio.gather(*(_park(client, gate) for _ in range(count)))
    return sum(parked)


@contextmanager
def _signed_in(base_url: str, admin_key: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, timeout=TIMEOUT) as client:
        form = client.get("/admin/login")
        match = CSRF_FIELD.search(form.text)
        if match is None:
            raise RuntimeError("the sign-in page has no CSRF field")
        token = match.group(1)
        signed = client.post("/admin/login", data={"api_key": admin_key, "csrf_token": token})
        if signed.status_code != 303:
            raise RuntimeError(f"admin sign-in failed: {signed.status_code}")
        yield client


def time_queue_page(client: httpx.Client, loads: int) -> tuple[list[float], int]:
    """Seconds per ``GET /admin`` and the page's size in bytes."""
    times, size = [], 0
    for _ in range(loads):
        start = time.perf_counter()
        page = client.get("/admin")
        times.append(time.perf_counter() - start)
        page.raise_for_status()
        size = len(page.content)
    return sorted(times), size


def measure(settings: Settings) -> WaitingRow:
    with tempfile.TemporaryDirectory(prefix="bench-waiting-") as tmp:
        workdir = Path(tmp)
        config = write_config(workdir)
        base_url = f"http://127.0.0.1:{settings.port}"
        # mcp-server-time is installed beside our Python; the gateway runs bare names from PATH.
        path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
        with targets.serve_gateway(workdir, settings.port, config, {"PATH": path}) as (pid, key):
            admin_key = _admin_key(config)
            with httpx.Client(
                base_url=base_url, headers={"Authorization": f"Bearer {key}"}, timeout=TIMEOUT
            ) as client:
                _wait_for_tool(client)
            # One turn parked first warms the imports and the MCP session before RSS idle.
            asyncio.run(park_all(base_url, key, 1))
            idle = procstat.sample(pid).rss_mb
            start = time.perf_counter()
            waiting = asyncio.run(park_all(base_url, key, settings.conversations - 1)) + 1
            park_seconds = time.perf_counter() - start
            loaded = procstat.sample(pid).rss_mb
            with _signed_in(base_url, admin_key) as admin:
                admin.get("/admin").raise_for_status()  # untimed: templates compile, caches fill
                cpu = procstat.sample(pid).cpu_seconds
                times, size = time_queue_page(admin, settings.loads)
                cpu = procstat.sample(pid).cpu_seconds - cpu
            rss = max(loaded, procstat.sample(pid).rss_mb)
    return WaitingRow(
        conversations=settings.conversations,
        waiting=waiting,
        rss_idle_mb=idle,
        rss_waiting_mb=rss,
        park_seconds=park_seconds,
        loads=len(times),
        page_p50_ms=percentile(times, 0.50) * 1000,
        page_p90_ms=percentile(times, 0.90) * 1000,
        page_cpu_ms=cpu * 1000 / max(len(times), 1),
        page_kb=size / 1024,
        load_average=os.getloadavg()[0],
    )


def table(row: WaitingRow) -> list[str]:
    return [
        "| waiting for approval | RSS idle MB | RSS waiting MB | parked in s | queue page loads "
        "| p50 ms | p90 ms | CPU ms | page KB | load |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {row.waiting:,} of {row.conversations:,} | {row.rss_idle_mb:.0f} "
        f"| {row.rss_waiting_mb:.0f} | {row.park_seconds:.1f} | {row.loads} "
        f"| {row.page_p50_ms:.1f} | {row.page_p90_ms:.1f} | {row.page_cpu_ms:.1f} "
        f"| {row.page_kb:.0f} "
        f"| {row.load_average:.1f} |",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.waiting", description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=Settings.conversations)
    parser.add_argument("--loads", type=int, default=Settings.loads)
    parser.add_argument("--port", type=int, default=Settings.port)
    args = parser.parse_args(argv)
    if not 1 <= args.conversations <= 10_000 or not 1 <= args.loads <= 1000:
        parser.error("keep runs bounded: 1..10,000 conversations, 1..1,000 loads")
    settings = Settings(conversations=args.conversations, loads=args.loads, port=args.port)
    print("\n".join(table(measure(settings))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
