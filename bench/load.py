"""Load against 127.0.0.1 only: wrk for throughput and latency, a raw asyncio client for the
time to the first streamed byte and for holding many streams open at once."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import statistics
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from urllib.parse import urlsplit

LUA = Path(__file__).with_name("wrk_post.lua")


@dataclass(frozen=True)
class Target:
    """One server under test: where to POST and with which key."""

    name: str
    url: str  # the full chat completions URL
    auth: str
    pid: int | None  # the server process, for CPU and memory; None to skip


@dataclass(frozen=True)
class WrkResult:
    requests: int
    seconds: float
    errors: int
    p50_ms: float
    p90_ms: float
    p99_ms: float
    wrk_cpu_seconds: float

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


def request_body(model: str, stream: bool) -> str:
    body: dict[str, object] = {
        "model": model,
        "messages": [{"role": "user", "content": "Say hello."}],
        "max_tokens": 32,
    }
    if stream:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    return json.dumps(body)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_wrk(url: str, auth: str, body: str, connections: int, seconds: float) -> WrkResult:
    """One wrk run on one thread (the server needs the other core more than wrk does)."""
    _check_local(url)
    before = _children_cpu()
    command = ["wrk", "-t1", f"-c{connections}", f"-d{round(seconds)}s", "--timeout", "10s"]
    completed = subprocess.run(
        [*command, "-s", str(LUA), url],
        env={**os.environ, "BENCH_AUTH": auth, "BENCH_BODY": body},
        capture_output=True,
        text=True,
        timeout=seconds + 30,
        check=True,
    )
    line = next(x for x in completed.stdout.splitlines() if x.startswith("BENCH_JSON "))
    data = json.loads(line.removeprefix("BENCH_JSON "))
    return WrkResult(
        requests=data["requests"],
        seconds=data["duration_us"] / 1e6,
        errors=data["socket_errors"] + data["non2xx"],
        p50_ms=data["p50_us"] / 1000,
        p90_ms=data["p90_us"] / 1000,
        p99_ms=data["p99_us"] / 1000,
        wrk_cpu_seconds=_children_cpu() - before,
    )


def _check_local(url: str) -> None:
    if urlsplit(url).hostname != "127.0.0.1":
        raise ValueError(f"load goes to 127.0.0.1 only, not {url}")


def _raw_post(url: str, auth: str, body: str) -> tuple[str, int, bytes]:
    _check_local(url)
    parts = urlsplit(url)
    payload = body.encode()
    head = (
        f"POST {parts.path} HTTP/1.1\r\nHost: 127.0.0.1:{parts.port}\r\n"
        f"Authorization: Bearer {auth}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\n\r\n"
    )
    return "127.0.0.1", parts.port or 80, head.encode() + payload


async def _first_byte(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: bytes
) -> tuple[float, bytes]:
    """Sends one request; returns the seconds to the first body byte and the response head."""
    start = perf_counter()
    writer.write(raw)
    head = await reader.readuntil(b"\r\n\r\n")
    await reader.readexactly(1)
    return perf_counter() - start, head


async def _drain(reader: asyncio.StreamReader, head: bytes) -> None:
    lowered = head.lower()
    if b"transfer-encoding: chunked" in lowered:
        await reader.readuntil(b"\r\n0\r\n\r\n")
        return
    length = int(lowered.split(b"content-length:")[1].split(b"\r\n")[0])
    await reader.readexactly(length - 1)


async def _ttfb(url: str, auth: str, body: str, count: int) -> list[float]:
    """``count`` requests one after another on one kept-alive connection; their times to the
    first body byte."""
    host, port, raw = _raw_post(url, auth, body)
    reader, writer = await asyncio.open_connection(host, port)
    times = []
    try:
        for _ in range(count):
            seconds, head = await _first_byte(reader, writer, raw)
            if not head.startswith(b"HTTP/1.1 200"):
                raise RuntimeError(f"{url} answered {head.splitlines()[0]!r}")
            await _drain(reader, head)
            times.append(seconds)
    finally:
        writer.close()
    return times


def post_exactly(url: str, auth: str, body: str, connections: int, count: int) -> None:
    """``count`` requests (rounded down to a multiple of ``connections``), each connection
    kept alive and posting one after another: a fixed amount of work, where wrk runs for a time."""
    each = count // connections

    async def all_connections() -> None:
        await asyncio.gather(*(_ttfb(url, auth, body, each) for _ in range(connections)))

    asyncio.run(all_connections())


def first_byte_ms(url: str, auth: str, body: str, count: int) -> tuple[float, float]:
    """p50 and p99 milliseconds to the first body byte, one request at a time, kept alive."""
    times = sorted(asyncio.run(_ttfb(url, auth, body, count)))
    return statistics.median(times) * 1000, times[int(len(times) * 0.99) - 1] * 1000


async def _hold_one(
    raw: bytes, host: str, port: int, opened: Callable[[], None], release: asyncio.Event
) -> bool:
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError:
        return False
    try:
        _, head = await _first_byte(reader, writer, raw)
        if not head.startswith(b"HTTP/1.1 200"):
            return False
        opened()
        await release.wait()
        return True
    except (OSError, asyncio.IncompleteReadError):
        return False
    finally:
        writer.close()


async def _hold(
    url: str, auth: str, body: str, count: int, *, timeout: float, measure: Callable[[], float]
) -> tuple[int, float]:
    host, port, raw = _raw_post(url, auth, body)
    release, everyone = asyncio.Event(), asyncio.Event()
    open_now = 0

    def opened() -> None:
        nonlocal open_now
        open_now += 1
        if open_now == count:
            everyone.set()

    tasks = [asyncio.create_task(_hold_one(raw, host, port, opened, release)) for _ in range(count)]
    try:
        async with asyncio.timeout(timeout):
            await everyone.wait()
    except TimeoutError:
        pass
    peak = measure()
    reached = open_now
    release.set()
    await asyncio.gather(*tasks)
    return reached, peak


def hold_streams(
    url: str, auth: str, body: str, count: int, *, timeout: float, measure: Callable[[], float]
) -> tuple[int, float]:
    """Opens ``count`` streams that stay open; returns how many were open together and
    ``measure()`` taken while they were (the server's resident memory)."""
    return asyncio.run(_hold(url, auth, body, count, timeout=timeout, measure=measure))
