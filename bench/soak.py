"""The soak: two replicas on PostgreSQL and Redis under mixed traffic, with faults on a schedule.

    make soak                                         # 10 minutes, writes docs/reliability.md
    .venv/bin/python -m bench.soak --minutes 2 --rate 6

Two ``llm-gateway serve --workers 1`` replicas share a PostgreSQL and a Redis of the soak's own
(``bench/soak_services.py``: a fresh cluster from ``initdb`` and a ``redis-server``, each on a free
loopback port, removed on exit), in front of the project's fakes: the fake
OpenAI server (tests/support/fake_openai.py) for chat, streams, Responses and embeddings, and the
counting MCP server (tests/support/counting_mcp_server.py), which notes every execution, for
conversations whose mock model calls a tool that needs an admin's approval, and for ``/mcp``.
Traffic goes at a steady rate, round robin over the kinds, to either replica (the other one when
a connection is refused, as a Service would), at most ``--max-requests``. Faults, in order, at
even intervals, the whole schedule twice: upstream 500s, upstream 429s, a tool server that
hangs (SIGSTOP), kill -9 of a replica (restarted), PostgreSQL restarted (``pg_ctl restart -m
fast``), PostgreSQL crashed and restarted (``-m immediate``), Redis stopped for 30 s. Then the
invariants (``bench/soak_checks.py``) are checked and written as a table into
docs/reliability.md (``bench/soak_results.py``); the deployment is ``bench/soak_setup.py``.

The faults hit only the soak's own servers: the machine's shared PostgreSQL (127.0.0.1:5432) and
Redis (6379), which other test runs use, are never touched. Everything the soak started is stopped
and removed when it ends, on failure and Ctrl-C too; its logs are kept only when it failed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx
import yaml

from bench.soak_checks import Outcome
from bench.soak_results import BEGIN, END, database_counts, evaluate, report
from bench.soak_services import Postgres, Redis, own_services
from bench.soak_setup import (
    ADMIN_KEY,
    BUDGET,
    BURST,
    KINDS,
    PRICE,
    RECOVERY_LIMIT,
    REPORT,
    ROOT,
    TIMEOUT,
    TURN_TIMEOUT,
    Replica,
    config,
    create_key,
)
from tests.support.fake_openai import FakeOpenAI, FakeReply
from tests.support.mcp_servers import ServerProcess, counting_server, free_port
from tests.support.servers import serve

ROUNDS = 2  # of the whole fault schedule


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench.soak", description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=8.0, help="requests a second")
    parser.add_argument("--max-requests", type=int, default=20_000)
    parser.add_argument("--faults", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--output", type=Path, default=REPORT)
    return parser.parse_args(argv)


@dataclass
class Soak:
    args: argparse.Namespace
    replicas: list[Replica]
    fake: FakeOpenAI
    tool_server: ServerProcess
    postgres: Postgres
    redis: Redis
    user_key: str = ""
    probe_key: str = ""
    budget_key: str = ""
    budget_spent: float = 0.0
    began: float = field(default_factory=time.monotonic)
    outcomes: list[Outcome] = field(default_factory=list)
    recoveries: dict[str, float | None] = field(default_factory=dict)
    rss: list[float] = field(default_factory=list)
    metrics_kb: list[float] = field(default_factory=list)
    metrics_pages: list[str] = field(default_factory=list)  # kept to show what grew
    sampled_at: list[float] = field(default_factory=list)
    fault_round: int = 0
    kills: list[float] = field(default_factory=list)  # when replica 2 was killed
    # The end of the faults' first round: each status, error type and tool-call state the
    # faults produce has had its metric series made once by then. None: no faults.
    warmed_at: float | None = None
    conversations: list[str] = field(default_factory=list)

    def now(self) -> float:
        return time.monotonic() - self.began

    # --- traffic ---------------------------------------------------------------------------

    async def send(self, client: httpx.AsyncClient, kind: str, number: int) -> None:
        started = self.now()
        first, second = self.replicas[number % 2], self.replicas[(number + 1) % 2]
        status: int | None = None
        error = request_id = None
        served_by = first.name
        try:
            async with asyncio.timeout(TIMEOUT):
                try:
                    status, request_id = await self.request(client, first.url, kind, self.user_key)
                except httpx.ConnectError:  # the replica is down: the other one, as a Service
                    served_by = second.name
                    status, request_id = await self.request(client, second.url, kind, self.user_key)
        except (httpx.HTTPError, TimeoutError) as exc:
            error = type(exc).__name__
        ended = self.now()
        self.outcomes.append(
            Outcome(kind, started, ended - started, status, error, request_id, served_by)
        )

    async def request(
        self, client: httpx.AsyncClient, url: str, kind: str, key: str
    ) -> tuple[int, str | None]:
        """The status, and the gateway's request id (which its usage row carries)."""
        headers = {"Authorization": f"Bearer {key}"}
        messages = [{"role": "user", "content": "hello"}]
        if kind in ("chat", "stream"):
            body = {"model": "chat", "messages": messages, "stream": kind == "stream"}
            async with client.stream(
                "POST", f"{url}/v1/chat/completions", json=body, headers=headers
            ) as response:
                async for _ in response.aiter_bytes():
                    pass
        elif kind == "responses":
            body = {"model": "chat", "input": "hello", "store": False}
            response = await client.post(f"{url}/v1/responses", json=body, headers=headers)
        elif kind == "embeddings":
            body = {"model": "embed", "input": "hello"}
            response = await client.post(f"{url}/v1/embeddings", json=body, headers=headers)
        elif kind == "conversation":
            response = await client.post(
                f"{url}/v1/conversations", json={"model": "agent"}, headers=headers
            )
            if response.status_code == 201:
                conversation_id = response.json()["id"]
                self.conversations.append(conversation_id)
                response = await client.post(
                    f"{url}/v1/conversations/{conversation_id}/messages",
                    json={"content": "record it"},
                    headers=headers,
                )
        else:
            call = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "soak"}},
            }
            mcp_headers = {**headers, "Accept": "application/json, text/event-stream"}
            response = await client.post(f"{url}/mcp", json=call, headers=mcp_headers)
        return response.status_code, response.headers.get("x-request-id")

    async def budget_burst(self) -> None:
        """BURST priced requests at once, split over both replicas and the spending routes."""
        headers = {"Authorization": f"Bearer {self.budget_key}"}
        messages = [{"role": "user", "content": "spend"}]
        bodies = [
            ("/v1/chat/completions", {"model": "priced", "messages": messages}),
            ("/v1/chat/completions", {"model": "priced", "messages": messages, "stream": True}),
            ("/v1/responses", {"model": "priced", "input": "spend", "store": False}),
        ]

        async def one(client: httpx.AsyncClient, number: int) -> bool:
            path, body = bodies[number % len(bodies)]
            url = self.replicas[number % 2].url
            with contextlib.suppress(httpx.HTTPError):
                async with client.stream("POST", url + path, json=body, headers=headers) as r:
                    text = b"".join([chunk async for chunk in r.aiter_bytes()])
                    return r.status_code == 200 and b'"error"' not in text
            return False

        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            served = await asyncio.gather(*(one(client, n) for n in range(BURST)))
        self.budget_spent = sum(served) * PRICE

    async def traffic(self, until: float) -> None:
        tasks: set[asyncio.Task[None]] = set()
        limits = httpx.Limits(max_connections=200)
        async with httpx.AsyncClient(timeout=TIMEOUT, limits=limits) as client:
            number = 0
            while self.now() < until and number < self.args.max_requests:
                kind = KINDS[number % len(KINDS)]
                task = asyncio.create_task(self.send(client, kind, number))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
                number += 1
                await asyncio.sleep(max(0.0, number / self.args.rate - self.now()))
            await asyncio.gather(*tasks)

    async def approver(self, until: float) -> None:
        """An admin approving every held call, as a reviewer would, once a second."""
        headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
        async with httpx.AsyncClient(timeout=10, headers=headers) as client:
            while self.now() < until:
                for replica in self.replicas:
                    with contextlib.suppress(httpx.HTTPError, ValueError, KeyError):
                        pending = await client.get(f"{replica.url}/v1/admin/approvals")
                        for call in pending.json()["data"]:
                            await client.post(
                                f"{replica.url}/v1/admin/approvals/{call['record_id']}/approve"
                            )
                        break
                await asyncio.sleep(1)

    async def sampler(self, until: float) -> None:
        """The first replica's RSS and /metrics size (it is never killed), every 5 s."""
        async with httpx.AsyncClient(timeout=10) as client:
            while self.now() < until:
                with contextlib.suppress(httpx.HTTPError):
                    page = await client.get(f"{self.replicas[0].url}/metrics")
                    self.metrics_kb.append(len(page.content) / 1024)
                    self.metrics_pages.append(page.text)
                    self.rss.append(self.replicas[0].rss_mb())
                    self.sampled_at.append(self.now())
                await asyncio.sleep(5)

    # --- faults ----------------------------------------------------------------------------

    async def probe(self, kind: str, replica: Replica | None = None) -> bool:
        targets = [replica] if replica else self.replicas
        async with httpx.AsyncClient(timeout=10) as client:
            for target in targets:
                with contextlib.suppress(httpx.HTTPError, TimeoutError):
                    # A key of their own: the soak's key counts usage against its traffic alone.
                    status, _ = await self.request(client, target.url, kind, self.probe_key)
                    if status in (200, 201):
                        return True
        return False

    async def recovery(self, name: str, kind: str, replica: Replica | None = None) -> None:
        """Seconds from the fault's end until a request of ``kind`` succeeds again."""
        name = f"{name}, round {self.fault_round}"
        start = time.monotonic()
        while time.monotonic() - start < RECOVERY_LIMIT * 2:
            if await self.probe(kind, replica):
                self.recoveries[name] = time.monotonic() - start
                return
            await asyncio.sleep(0.2)
        self.recoveries[name] = None

    async def upstream_outage(self, status: int, seconds: float) -> None:
        error = {"message": "soak fault", "type": "server_error" if status == 500 else "rate"}
        self.fake.outage = FakeReply(status=status, error=error, headers={"retry-after": "1"})
        await asyncio.sleep(seconds)
        self.fake.outage = None
        await self.recovery(f"upstream answering {status} for {seconds:g} s", "chat")

    async def tool_server_hangs(self, seconds: float) -> None:
        process = self.tool_server.process
        assert process is not None
        process.send_signal(signal.SIGSTOP)
        try:
            await asyncio.sleep(seconds)
        finally:
            process.send_signal(signal.SIGCONT)
        await self.recovery(f"tool server hung for {seconds:g} s", "mcp")

    async def kill_replica(self) -> None:
        victim = self.replicas[1]
        victim.kill()
        self.kills.append(self.now())
        await asyncio.sleep(1)
        victim.start()  # as Kubernetes restarts a dead pod
        await self.recovery("kill -9 of a replica (restarted at once)", "chat", victim)

    async def restart_postgres(self, mode: str, name: str) -> None:
        await asyncio.to_thread(self.postgres.restart, mode)
        await self.recovery(name, "conversation")

    async def stop_redis(self, seconds: float) -> None:
        await asyncio.to_thread(self.redis.stop)
        try:
            await asyncio.sleep(seconds)
        finally:
            await asyncio.to_thread(self.redis.start)
        await self.recovery(f"Redis stopped for {seconds:g} s", "chat")

    async def faults(self, until: float) -> None:
        schedule: list[tuple[str, Callable[[], Awaitable[None]]]] = [
            ("upstream 500", lambda: self.upstream_outage(500, 10)),
            ("upstream 429", lambda: self.upstream_outage(429, 10)),
            ("tool server hangs", lambda: self.tool_server_hangs(20)),
            ("kill -9", self.kill_replica),
            (
                "PostgreSQL restart",
                lambda: self.restart_postgres("fast", "PostgreSQL restart (fast shutdown)"),
            ),
            (
                "PostgreSQL crash",
                lambda: self.restart_postgres("immediate", "PostgreSQL crash (immediate restart)"),
            ),
            ("Redis stopped", lambda: self.stop_redis(30)),
        ]
        # Every fault twice: the first round is part of the warm-up (a status or tool-call state
        # seen for the first time adds its metric series once); the second shows whether any
        # fault leaves something growing. Spread so that the last one (Redis, 30 s) ends while
        # traffic still runs.
        interval = max(until - 40, 1) / (len(schedule) * ROUNDS)
        for number in range(len(schedule) * ROUNDS):
            self.fault_round = number // len(schedule) + 1
            name, fault = schedule[number % len(schedule)]
            await asyncio.sleep(max(0.0, (number + 1) * interval - self.now()))
            print(f"{self.now():6.0f} s  fault: {name} (round {self.fault_round})", flush=True)
            await fault()
            if number == len(schedule) - 1:
                self.warmed_at = self.now()

    async def run(self) -> None:
        until = self.args.minutes * 60
        jobs = [
            self.traffic(until),
            # Past the traffic, past the turn timeout: a turn cut short by a fault is ended by
            # the sweeper by then, or never.
            self.approver(until + TURN_TIMEOUT + 15),
            self.sampler(until),
            self.budget_burst(),
        ]
        if self.args.faults:
            jobs.append(self.faults(until))
        await asyncio.gather(*jobs)


def soak(args: argparse.Namespace, workdir: Path) -> bool:
    """Runs the soak, writes its table; whether every invariant held."""
    fake = FakeOpenAI()
    executions = workdir / "executions.txt"
    executions.touch()
    with (
        own_services(workdir) as (postgres, redis),
        serve(fake.app()) as fake_url,
        counting_server(executions) as (tool_url, tool_server),
    ):
        path = workdir / "gateway.yaml"
        spool = workdir / "usage-spool"
        path.write_text(yaml.safe_dump(config(postgres.url, redis.url, fake_url, tool_url, spool)))
        gateway = str(ROOT / ".venv/bin/llm-gateway")
        subprocess.run([gateway, "migrate", "--config", str(path)], check=True)
        replicas = [Replica(f"replica-{n}", free_port(), path) for n in (1, 2)]
        try:
            for replica in replicas:  # one after the other: see issue 32 item 1
                replica.start()
                replica.wait_ready()
            run = Soak(
                args,
                replicas,
                fake,
                tool_server,
                postgres,
                redis,
                user_key=create_key(replicas[0], "soak"),
                probe_key=create_key(replicas[0], "probe"),
                budget_key=create_key(replicas[0], "budgeted", {"budget_per_day": BUDGET}),
            )
            print(
                f"soak: {args.minutes:g} min at {args.rate:g}/s; PostgreSQL on port "
                f"{postgres.port}, Redis on {redis.port}; logs in {workdir}",
                flush=True,
            )
            asyncio.run(run.run())
            time.sleep(3)  # the usage batches' flush interval, and a margin
            counts = asyncio.run(database_counts(postgres.url, workdir))
            usage_ids = set(json.loads((workdir / "usage_request_ids.json").read_text()))
        finally:
            for replica in replicas:
                replica.stop()
        done = len(executions.read_text().splitlines())
    results = evaluate(run, counts, usage_ids, done)
    section = report(args, run, results)
    print(section)
    (workdir / "outcomes.json").write_text(json.dumps([asdict(o) for o in run.outcomes]))
    for number, page in enumerate(run.metrics_pages):  # to show what grew, and when
        (workdir / f"metrics-{run.sampled_at[number]:04.0f}s.txt").write_text(page)
    document = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
    if BEGIN in document:
        start, end = document.index(BEGIN), document.index(END) + len(END)
        document = document[:start] + section + document[end:]
    else:
        document += f"\n## Soak results\n\n{section}\n"
    args.output.write_text(document, encoding="utf-8")
    return all(check.held for check in results)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # A plain kill ends the soak as Ctrl-C does: through its clean-up.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    workdir = Path(tempfile.mkdtemp(prefix="soak-"))
    held = False
    try:
        held = soak(args, workdir)
    finally:
        if held:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"soak: failed or interrupted; its logs are kept in {workdir}", file=sys.stderr)
    return 0 if held else 1


if __name__ == "__main__":
    sys.exit(main())
