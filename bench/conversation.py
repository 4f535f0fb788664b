"""Conversation turns through the native API, and whether their cost grows with the history.

    .venv/bin/python -m bench.conversation                 # SQLite and PostgreSQL, printed
    .venv/bin/python -m bench.conversation --databases sqlite --turns 100

``llm-gateway serve --workers 1`` with the ``mock`` model (no tools; it echoes the last user
message), a real key, usage recorded, one log line a request. Each timed turn is one
``POST /v1/conversations/{id}/messages`` on a kept-alive connection, one at a time:

- ``short``: on a conversation holding one earlier turn (made untimed beforehand);
- ``long``: on one conversation filled with ``--history`` turns beforehand (through the API too),
  so every timed turn there follows at least that many.

The two alternate in blocks, so other work on the machine hits both alike. Creating a
conversation is timed as well. PostgreSQL gets a throwaway database, dropped afterwards.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import yaml

from bench import procstat, targets
from bench.databases import database
from bench.stats import percentile

TIMEOUT = 30.0


@dataclass(frozen=True)
class ConversationRow:
    database: str  # sqlite | postgresql
    kind: str  # create | short | long
    history: int  # turns before each timed one (at least)
    count: int
    p50_ms: float
    p90_ms: float
    p99_ms: float
    errors: int
    cpu_ms: float  # the gateway process's CPU per timed request (the database server's not)
    load_average: float


@dataclass(frozen=True)
class Settings:
    turns: int = 300
    history: int = 400
    warmup: int = 20
    port: int = 18090
    databases: tuple[str, ...] = ("sqlite", "postgresql")


@dataclass
class Gateway:
    client: httpx.Client
    pid: int

    def cpu_seconds(self) -> float:
        return procstat.sample(self.pid).cpu_seconds


@contextmanager
def gateway_client(workdir: Path, port: int, database_url: str) -> Iterator[Gateway]:
    config = {
        "database_url": database_url,
        "log_level": "info",
        "models": [{"name": "mock", "provider": "mock"}],
    }
    path = workdir / "conversation-gateway.yaml"
    path.write_text(yaml.safe_dump(config))
    with (
        targets.serve_gateway(workdir, port, path, {}, workers=1) as (pid, key),
        httpx.Client(
            base_url=f"http://127.0.0.1:{port}",
            headers={"Authorization": f"Bearer {key}"},
            timeout=TIMEOUT,
        ) as client,
    ):
        yield Gateway(client, pid)


def _create(client: httpx.Client) -> tuple[str, float]:
    start = time.perf_counter()
    created = client.post("/v1/conversations", json={"model": "mock"})
    seconds = time.perf_counter() - start
    created.raise_for_status()
    return created.json()["id"], seconds


def _turn(client: httpx.Client, conversation: str) -> tuple[float, bool]:
    start = time.perf_counter()
    answer = client.post(f"/v1/conversations/{conversation}/messages", json={"content": "hi"})
    seconds = time.perf_counter() - start
    return seconds, answer.status_code == 200 and answer.json()["status"] == "completed"


def _row(
    database: str, kind: str, history: int, times: list[float], *, errors: int, cpu: float
) -> ConversationRow:
    times = sorted(times)
    return ConversationRow(
        database=database,
        kind=kind,
        history=history,
        count=len(times),
        p50_ms=percentile(times, 0.50) * 1000,
        p90_ms=percentile(times, 0.90) * 1000,
        p99_ms=percentile(times, 0.99) * 1000,
        errors=errors,
        cpu_ms=cpu * 1000 / max(len(times), 1),
        load_average=os.getloadavg()[0],
    )


def measure_database(gateway: Gateway, name: str, settings: Settings) -> list[ConversationRow]:
    client = gateway.client
    long, _ = _create(client)
    for _ in range(settings.history):
        _turn(client, long)
    shorts, creates = [], []
    create_cpu = 0.0
    for _ in range(settings.turns + settings.warmup):
        before = gateway.cpu_seconds()
        conversation, seconds = _create(client)
        create_cpu += gateway.cpu_seconds() - before
        creates.append(seconds)
        _turn(client, conversation)
        shorts.append(conversation)
    for conversation in shorts[: settings.warmup]:
        _turn(client, conversation)
        _turn(client, long)
    shorts = shorts[settings.warmup :]
    times: dict[str, list[float]] = {"short": [], "long": []}
    errors = {"short": 0, "long": 0}
    cpu = {"short": 0.0, "long": 0.0}
    block = 25
    for start in range(0, settings.turns, block):
        batch = shorts[start : start + block]
        for kind in ("short", "long") if start // block % 2 == 0 else ("long", "short"):
            before = gateway.cpu_seconds()
            for conversation in batch:
                seconds, ok = _turn(client, conversation if kind == "short" else long)
                times[kind].append(seconds)
                errors[kind] += not ok
            cpu[kind] += gateway.cpu_seconds() - before
    warm = settings.warmup / (settings.turns + settings.warmup)
    return [
        _row(name, "create", 0, creates[settings.warmup :], errors=0, cpu=create_cpu * (1 - warm)),
        _row(name, "short", 1, times["short"], errors=errors["short"], cpu=cpu["short"]),
        _row(name, "long", settings.history, times["long"], errors=errors["long"], cpu=cpu["long"]),
    ]


def measure(settings: Settings) -> list[ConversationRow]:
    rows: list[ConversationRow] = []
    with tempfile.TemporaryDirectory(prefix="bench-conversation-") as tmp:
        for name in settings.databases:
            workdir = Path(tmp) / name
            workdir.mkdir()
            with (
                database(name, workdir, "bench_conv") as url,
                gateway_client(workdir, settings.port, url) as c,
            ):
                rows += measure_database(c, name, settings)
    return rows


def table(rows: Sequence[ConversationRow]) -> list[str]:
    lines = [
        "| database | what | history (turns) | count | p50 ms | p90 ms | p99 ms | CPU ms "
        "| errors | load |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    what = {"create": "create a conversation", "short": "turn", "long": "turn"}
    for row in rows:
        history = "-" if row.kind == "create" else f"{row.history:,}"
        lines.append(
            f"| {row.database} | {what[row.kind]} | {history} | {row.count:,} "
            f"| {row.p50_ms:.2f} | {row.p90_ms:.2f} | {row.p99_ms:.2f} | {row.cpu_ms:.2f} "
            f"| {row.errors} "
            f"| {row.load_average:.1f} |"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.conversation", description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=Settings.turns)
    parser.add_argument("--history", type=int, default=Settings.history)
    parser.add_argument("--port", type=int, default=Settings.port)
    parser.add_argument(
        "--databases", nargs="+", choices=Settings.databases, default=list(Settings.databases)
    )
    args = parser.parse_args(argv)
    if args.turns > 5000 or args.history > 5000:
        parser.error("keep runs bounded: --turns <= 5000, --history <= 5000")
    settings = Settings(
        turns=args.turns, history=args.history, port=args.port, databases=tuple(args.databases)
    )
    print("\n".join(table(measure(settings))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
