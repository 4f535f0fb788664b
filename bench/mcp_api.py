"""A tool round trip through the gateway's HTTP API: a conversation turn that calls an MCP tool.

``bench/mcp.py`` times the MCP client alone; this times what a caller of the native API waits
for. The gateway (``llm-gateway serve``, SQLite, a real key) is configured with mcp-server-time
twice, over stdio (``time``) and over streamable HTTP (``time_http``, ``bench/mcp_server.py``), and
three scripted mock models:

- ``turn-plain`` answers at once: a turn with no tool, the baseline;
- ``turn-stdio`` / ``turn-http`` call ``get_current_time`` on one server, then answer with it.

Each measured turn is one ``POST /v1/conversations/{id}/messages`` on a new conversation (made
untimed beforehand, so history never grows), on SQLite and on PostgreSQL. A tool turn's extra
time over the plain one is the tool round: the call proposed, decided by policy and run (each
step persisted), the MCP call, the result stored and a second model call (the mock's is nearly
free).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import yaml

from bench import procstat, targets
from bench.databases import database
from bench.report import TurnRow
from bench.stats import percentile

PLAIN = "turn-plain"
SERVERS = {"stdio": "time", "streamable_http": "time_http"}
TURN_MODELS = {PLAIN: "no tool", "turn-stdio": "stdio", "turn-http": "streamable_http"}
DATABASES = ("sqlite", "postgresql")
TIMEOUT = 30.0  # seconds for one request; a turn this slow means something is broken


def _tool_model(name: str, server: str) -> dict[str, Any]:
    call = {"name": f"{server}__get_current_time", "arguments": {"timezone": "UTC"}}
    return {
        "name": name,
        "provider": "mock",
        "script": [{"tool_calls": [call]}, {"text": "It is {last_tool_result}"}],
    }


def write_config(workdir: Path, mcp_url: str, database_url: str) -> Path:
    stdio_server = {
        "name": SERVERS["stdio"],
        "transport": "stdio",
        "command": "mcp-server-time",
        "args": ["--local-timezone", "UTC"],
        "roles": ["user"],
        # Tool pinning is on by default: a trusted server's tools are offered without review.
        "trusted": True,
    }
    http_server = {
        "name": SERVERS["streamable_http"],
        "transport": "streamable_http",
        "url": mcp_url,
        "roles": ["user"],
        "trusted": True,
    }
    config = {
        "database_url": database_url,
        "log_level": "info",
        "models": [
            {"name": PLAIN, "provider": "mock", "script": [{"text": "It is noon."}]},
            _tool_model("turn-stdio", SERVERS["stdio"]),
            _tool_model("turn-http", SERVERS["streamable_http"]),
        ],
        "mcp_servers": [stdio_server, http_server],
        # Both servers offer the same tools: the models name each server's own.
        "tool_catalog": {"always_namespace": True},
    }
    path = workdir / "gateway.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@contextmanager
def api_client(
    workdir: Path, port: int, mcp_url: str, database_url: str | None = None
) -> Iterator[tuple[int, httpx.Client]]:
    """The gateway serving the turn models (on SQLite unless ``database_url``); yields its pid
    (to profile it) and a kept-alive client carrying its key."""
    database_url = database_url or f"sqlite+aiosqlite:///{workdir}/gateway.db"
    config = write_config(workdir, mcp_url, database_url)
    with (
        targets.serve_gateway(workdir, port, config, {}) as (pid, key),
        httpx.Client(
            base_url=f"http://127.0.0.1:{port}",
            headers={"Authorization": f"Bearer {key}"},
            timeout=TIMEOUT,
        ) as client,
    ):
        _wait_for_tools(client)
        yield pid, client


def _wait_for_tools(client: httpx.Client, timeout: float = 60) -> None:
    wanted = {f"{server}__get_current_time" for server in SERVERS.values()}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        names = {tool["name"] for tool in client.get("/v1/tools").json()["data"]}
        if wanted <= names:
            return
        time.sleep(0.2)
    raise TimeoutError(f"the gateway did not list {sorted(wanted)} within {timeout} s")


def _turn(client: httpx.Client, model: str) -> tuple[float, bool]:
    """One timed turn on a new conversation; True when it completed and its tool call succeeded."""
    created = client.post("/v1/conversations", json={"model": model})
    created.raise_for_status()
    path = f"/v1/conversations/{created.json()['id']}/messages"
    start = time.perf_counter()
    answer = client.post(path, json={"content": "What time is it?"})
    seconds = time.perf_counter() - start
    if answer.status_code != 200:
        return seconds, False
    body = answer.json()
    calls_ok = all(call["state"] == "succeeded" for call in body["tool_calls"])
    expected_calls = 0 if model == PLAIN else 1
    completed = body["status"] == "completed" and len(body["tool_calls"]) == expected_calls
    return seconds, completed and calls_ok


def _row(tool: str, times: list[float], errors: int, database: str, cpu_ms: float) -> TurnRow:
    times = sorted(times)
    return TurnRow(
        tool=tool,
        turns=len(times),
        p50_ms=percentile(times, 0.50) * 1000,
        p90_ms=percentile(times, 0.90) * 1000,
        p99_ms=percentile(times, 0.99) * 1000,
        errors=errors,
        load_average=os.getloadavg()[0],
        database=database,
        cpu_ms_per_turn=cpu_ms,
    )


def measure_turns(
    client: httpx.Client, turns: int, warmup: int, pid: int, database: str = "sqlite"
) -> list[TurnRow]:
    """Every model's turns in alternating blocks, after a warm-up of each, with each model's
    CPU per turn in the process tree of ``pid`` (the gateway and the stdio tool servers it
    runs)."""
    for model in TURN_MODELS:
        for _ in range(warmup):
            _turn(client, model)
    times: dict[str, list[float]] = {model: [] for model in TURN_MODELS}
    errors = dict.fromkeys(TURN_MODELS, 0)
    cpu = dict.fromkeys(TURN_MODELS, 0.0)
    order = list(TURN_MODELS)
    block = 25
    done = 0
    while done < turns:
        count = min(block, turns - done)
        for model in order:
            before = procstat.sample(pid).cpu_seconds
            for _ in range(count):
                seconds, ok = _turn(client, model)
                times[model].append(seconds)
                errors[model] += not ok
            cpu[model] += procstat.sample(pid).cpu_seconds - before
        order.reverse()
        done += count
    return [
        _row(TURN_MODELS[m], times[m], errors[m], database, cpu[m] * 1000 / turns)
        for m in TURN_MODELS
    ]


def main(argv: Sequence[str] | None = None) -> None:
    """Times the turns alone (``make bench`` runs them within ``bench.mcp``): p50 of each model
    and each tool turn's extra time over the plain turn, the tool round."""
    from bench.mcp import http_server  # bench.mcp imports this module

    parser = argparse.ArgumentParser(prog="bench.mcp_api", description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--port", type=int, default=18650)
    parser.add_argument(
        "--databases", nargs="+", choices=DATABASES, default=["sqlite"], help="default: sqlite"
    )
    args = parser.parse_args(argv)
    with http_server(args.port) as (mcp_url, _server_pid):
        for name in args.databases:
            rows = database_turns(name, args.port + 1, mcp_url, args.turns, args.warmup)
            plain = next(row for row in rows if row.tool == TURN_MODELS[PLAIN])
            for row in rows:
                extra = "" if row is plain else f", round +{row.p50_ms - plain.p50_ms:.2f} ms"
                print(row_line(row) + extra, flush=True)


def database_turns(name: str, port: int, mcp_url: str, turns: int, warmup: int) -> list[TurnRow]:
    """Every model's turns through a gateway on a fresh database of kind ``name``."""
    with (
        tempfile.TemporaryDirectory(prefix="bench-mcp-api-") as tmp,
        database(name, Path(tmp), "bench_mcp") as url,
        api_client(Path(tmp), port, mcp_url, url) as (pid, client),
    ):
        return measure_turns(client, turns, warmup, pid, name)


def row_line(row: TurnRow) -> str:
    return (
        f"{row.database:10} {row.tool:15} p50 {row.p50_ms:.2f} p90 {row.p90_ms:.2f} "
        f"p99 {row.p99_ms:.2f} ms, CPU {row.cpu_ms_per_turn or 0:.2f} ms/turn, "
        f"{row.errors} errors, load {row.load_average:.2f}"
    )


if __name__ == "__main__":
    main()
