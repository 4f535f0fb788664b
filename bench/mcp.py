"""MCP tool round trip: the gateway's MCP client against the SDK's ClientSession alone.

    .venv/bin/python -m bench.mcp                   # prints the tables, about 2 minutes
    .venv/bin/python -m bench.mcp --calls 500 --transports stdio --turns 0

Both clients call PyPI's mcp-server-time (`get_current_time`, timezone UTC) over stdio (each
client starts its own child, as the gateway does) and over streamable HTTP (the same server under
uvicorn in a child process on 127.0.0.1, ``bench/mcp_server.py``; both clients share it).

- ``direct``: the SDK's ``ClientSession.call_tool`` on a session opened with the SDK's own
  transport, the least any Python MCP client does.
- ``gateway``: ``MCPToolCatalog.call_tool``, the call the tool executor makes: argument
  validation, the per-server concurrency limit, the timeout, result conversion and truncation,
  on top of the same SDK session held in the supervisor's task.

The two alternate in blocks of calls (the order flips every block) so that other work on a shared
machine hits both alike. Every call and every run is bounded in time. Then ``bench/mcp_api.py``
times whole conversation turns that call the tool through the gateway's HTTP API.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvloop
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from bench import mcp_api, targets
from bench.report import MCPRow, TurnRow, mcp_table, turns_table
from bench.stats import percentile
from mcp_client import CatalogSettings, MCPServerConfig, MCPToolCatalog

TRANSPORTS = ("stdio", "streamable_http")
TOOL = "get_current_time"
ARGUMENTS: dict[str, Any] = {"timezone": "UTC"}
SERVER_ARGS = ["--local-timezone", "UTC"]
CALL_TIMEOUT = 10.0  # seconds; a call that takes this long means something is broken
BLOCK_TIMEOUT = 120.0

Call = Callable[[], Awaitable[bool]]  # one tool call; True when the tool answered without error
Opener = Callable[[], AbstractAsyncContextManager[Any]]


@dataclass(frozen=True)
class Settings:
    calls: int = 2000  # measured calls per client, transport and concurrency
    warmup: int = 100
    concurrency: tuple[int, ...] = (1, 16)
    transports: tuple[str, ...] = TRANSPORTS
    turns: int = 300  # conversation turns per model through the HTTP API; 0 skips them
    turns_warmup: int = 20
    databases: tuple[str, ...] = mcp_api.DATABASES  # the API turns'
    port: int = 18083  # the streamable HTTP server's; the gateway's is the next one


@dataclass
class _Sample:
    times: list[float] = field(default_factory=list)
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    errors: int = 0


async def _timed(call: Call, sample: _Sample) -> None:
    start = time.perf_counter()
    ok = await call()
    sample.times.append(time.perf_counter() - start)
    sample.errors += not ok


async def _block(call: Call, count: int, concurrency: int, sample: _Sample) -> None:
    """``count`` calls, ``concurrency`` in flight at once; adds the wall and CPU time taken."""
    remaining = count

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await _timed(call, sample)

    wall, cpu = time.perf_counter(), time.process_time()
    async with asyncio.timeout(BLOCK_TIMEOUT):
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    sample.seconds += time.perf_counter() - wall
    sample.cpu_seconds += time.process_time() - cpu


async def compare(
    clients: dict[str, Call], calls: int, concurrency: int, warmup: int
) -> dict[str, _Sample]:
    """Each client's warm-up, then their measured calls in alternating blocks."""
    for call in clients.values():
        await _block(call, warmup, concurrency, _Sample())
    samples = {name: _Sample() for name in clients}
    order = list(clients)
    block = 25 * concurrency
    done = 0
    while done < calls:
        count = min(block, calls - done)
        for name in order:
            await _block(clients[name], count, concurrency, samples[name])
        order.reverse()
        done += count
    return samples


def _row(transport: str, client: str, concurrency: int, sample: _Sample) -> MCPRow:
    times = sorted(sample.times)
    calls = len(times)
    return MCPRow(
        transport=transport,
        client=client,
        concurrency=concurrency,
        calls=calls,
        seconds=sample.seconds,
        p50_ms=percentile(times, 0.50) * 1000,
        p90_ms=percentile(times, 0.90) * 1000,
        p99_ms=percentile(times, 0.99) * 1000,
        cpu_ms_per_call=sample.cpu_seconds * 1000 / max(calls, 1),
        errors=sample.errors,
        load_average=os.getloadavg()[0],
    )


# --- the two clients ------------------------------------------------------------------------------


@asynccontextmanager
async def direct_client(open_streams: Opener) -> AsyncIterator[Call]:
    async with open_streams() as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()  # as any client does before calling; the gateway does too

        async def call() -> bool:
            result = await session.call_tool(TOOL, ARGUMENTS, read_timeout_seconds=CALL_TIMEOUT)
            return not result.is_error

        yield call


@asynccontextmanager
async def gateway_client(config: MCPServerConfig) -> AsyncIterator[Call]:
    catalog = MCPToolCatalog.from_config([config], CatalogSettings(), {})
    await catalog.start()
    try:
        status = catalog.status()[config.name]
        if status.state != "ready":
            raise RuntimeError(f"the gateway's MCP client could not reach it: {status.reason}")

        async def call() -> bool:
            result = await catalog.call_tool(TOOL, ARGUMENTS, timeout=CALL_TIMEOUT)
            return not result.is_error

        yield call
    finally:
        await catalog.aclose()


def _server_command() -> str:
    return str(Path(sys.executable).with_name("mcp-server-time"))


def _stdio(concurrency: int) -> tuple[Opener, MCPServerConfig]:
    parameters = StdioServerParameters(command=_server_command(), args=SERVER_ARGS)
    config = MCPServerConfig(
        name="time",
        transport="stdio",
        command=_server_command(),
        args=SERVER_ARGS,
        roles=["user"],
        max_concurrency=concurrency,  # so the per-server limit never queues the bench's calls
    )
    return lambda: stdio_client(parameters), config


def _streamable_http(url: str, concurrency: int) -> tuple[Opener, MCPServerConfig]:
    config = MCPServerConfig(
        name="time",
        transport="streamable_http",
        url=url,
        roles=["user"],
        max_concurrency=concurrency,
    )
    return lambda: streamable_http_client(url), config


# --- the streamable HTTP server -------------------------------------------------------------------


def _wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the MCP server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"the MCP server on port {port} did not come up in {timeout} s")


@contextmanager
def http_server(port: int) -> Iterator[tuple[str, int]]:
    """The time server over streamable HTTP in its own process; yields its URL and pid."""
    command = [sys.executable, "-m", "bench.mcp_server", "--port", str(port)]
    process = subprocess.Popen(command, cwd=targets.ROOT)
    try:
        _wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp", process.pid
    finally:
        targets.stop(process)


# --- running it -----------------------------------------------------------------------------------


async def _measure_transport(transport: str, settings: Settings, url: str | None) -> list[MCPRow]:
    rows: list[MCPRow] = []
    for concurrency in settings.concurrency:
        if transport == "stdio":
            opener, config = _stdio(concurrency)
        else:
            assert url is not None
            opener, config = _streamable_http(url, concurrency)
        async with direct_client(opener) as direct, gateway_client(config) as gateway:
            clients = {"direct": direct, "gateway": gateway}
            samples = await compare(clients, settings.calls, concurrency, settings.warmup)
        for client, sample in samples.items():
            row = _row(transport, client, concurrency, sample)
            rows.append(row)
            print(
                f"mcp {transport:15} {client:7} c={concurrency:<3} "
                f"{row.calls_per_second:6.0f} calls/s p50 {row.p50_ms:.2f} "
                f"p99 {row.p99_ms:.2f} ms, {row.cpu_ms_per_call:.2f} CPU ms/call, "
                f"{row.errors} errors",
                flush=True,
            )
    return rows


def measure(settings: Settings) -> tuple[list[MCPRow], list[TurnRow]]:
    """Every transport and concurrency, then the API turns. The event loop is uvloop's, as under
    ``llm-gateway serve``."""
    rows: list[MCPRow] = []
    turns: list[TurnRow] = []
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        if "stdio" in settings.transports:
            rows += runner.run(_measure_transport("stdio", settings, None))
        with http_server(settings.port) as (url, _pid):
            if "streamable_http" in settings.transports:
                rows += runner.run(_measure_transport("streamable_http", settings, url))
            if settings.turns:
                turns = _measure_turns(settings, url)
    return rows, turns


def _measure_turns(settings: Settings, mcp_url: str) -> list[TurnRow]:
    rows: list[TurnRow] = []
    for name in settings.databases:
        measured = mcp_api.database_turns(
            name, settings.port + 1, mcp_url, settings.turns, settings.turns_warmup
        )
        for row in measured:
            print(f"mcp api turn, {mcp_api.row_line(row)}", flush=True)
        rows += measured
    return rows


def parse_args(argv: Sequence[str] | None = None) -> Settings:
    parser = argparse.ArgumentParser(prog="bench.mcp", description=__doc__.splitlines()[0])
    defaults = Settings()
    parser.add_argument("--calls", type=int, default=defaults.calls)
    parser.add_argument("--warmup", type=int, default=defaults.warmup)
    parser.add_argument("--concurrency", nargs="+", type=int, default=list(defaults.concurrency))
    parser.add_argument(
        "--transports", nargs="+", choices=TRANSPORTS, default=list(defaults.transports)
    )
    parser.add_argument("--turns", type=int, default=defaults.turns, help="0: no API turns")
    parser.add_argument("--port", type=int, default=defaults.port, help="first of two ports")
    args = parser.parse_args(argv)
    if args.calls > 100_000 or max(args.concurrency) > 256 or args.turns > 10_000:
        parser.error("keep runs bounded: calls <= 100000, concurrency <= 256, turns <= 10000")
    return Settings(
        calls=args.calls,
        warmup=args.warmup,
        concurrency=tuple(args.concurrency),
        transports=tuple(args.transports),
        turns=args.turns,
        port=args.port,
    )


def main(argv: Sequence[str] | None = None) -> int:
    rows, turns = measure(parse_args(argv))
    print("\n".join([*mcp_table(rows), "", *turns_table(turns)]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
