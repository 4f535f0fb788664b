"""``serve --workers 2`` as a real process: both workers serve the one port, /metrics adds up
both, a lease-held job runs on one worker only, and SIGTERM drains every worker.

Every wait is on an event (a log line, a response, the process exit), bounded by a timeout.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from datetime import timedelta
from pathlib import Path

import httpx
import yaml
from prometheus_client import CollectorRegistry, multiprocess
from prometheus_client.parser import text_string_to_metric_families

from db.base import utcnow
from db.engine import create_engine, session_factory
from db.usage_models import UsageRecord
from migrations.commands import upgrade
from server.workers import available_cpus, cgroup_cpu_quota
from tests.gateway.test_shutdown import HeldStreams
from tests.support.gateway import create_key
from tests.support.processes import GatewayProcess, gateway_process
from tests.support.servers import serve

TIMEOUT = 30.0
ROUTE = "/v1/chat/completions"


def test_cgroup_v2_quota_rounds_up_and_caps_at_the_cpus(tmp_path: Path) -> None:
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert cgroup_cpu_quota(tmp_path) == 1.5
    assert available_cpus(tmp_path) == min(2, len(os.sched_getaffinity(0)))
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert cgroup_cpu_quota(tmp_path) is None


def test_cgroup_v1_quota_and_no_cgroup(tmp_path: Path) -> None:
    v1 = tmp_path / "cpu,cpuacct"
    v1.mkdir()
    (v1 / "cpu.cfs_quota_us").write_text("50000\n")
    (v1 / "cpu.cfs_period_us").write_text("100000\n")
    assert cgroup_cpu_quota(tmp_path) == 0.5
    assert available_cpus(tmp_path) == 1
    (v1 / "cpu.cfs_quota_us").write_text("-1\n")
    assert cgroup_cpu_quota(tmp_path) is None
    assert cgroup_cpu_quota(tmp_path / "missing") is None
    assert available_cpus(tmp_path / "missing") >= 1


def _seed_old_usage(database_url: str, count: int) -> None:
    async def seed() -> None:
        engine = create_engine(database_url)
        old = utcnow() - timedelta(days=40)
        try:
            async with session_factory(engine).begin() as session:
                session.add_all(
                    UsageRecord(
                        created_at=old,
                        request_id=f"old-{n}",
                        route=ROUTE,
                        model="mock",
                        latency_ms=1,
                        status_code=200,
                    )
                    for n in range(count)
                )
        finally:
            await engine.dispose()

    asyncio.run(seed())


class Log:
    """The process's log lines, read as needed and kept."""

    def __init__(self, gateway: GatewayProcess) -> None:
        self._gateway = gateway
        self.events: list[dict[str, object]] = []

    def until(
        self, *, count: int, events: set[str], prefix: bool = False
    ) -> list[dict[str, object]]:
        """Read until ``count`` lines of the named events (or events starting with one of the
        names) were seen; returns those lines."""

        def wanted(line: dict[str, object]) -> bool:
            event = str(line.get("event"))
            return any(event.startswith(name) for name in events) if prefix else event in events

        while True:
            found = [line for line in self.events if wanted(line)]
            if len(found) >= count:
                return found
            line = self._gateway.lines.get(timeout=TIMEOUT)
            if line.startswith("{"):
                self.events.append(json.loads(line))


def _per_worker_requests(metrics_dir: Path) -> dict[str, float]:
    """Chat requests each worker counted, from its own file in the multiprocess directory."""
    served: dict[str, float] = {}
    for path in metrics_dir.glob("counter_*.db"):
        pid = re.sub(r"\D", "", path.name)
        alone = metrics_dir / f"only-{pid}"
        alone.mkdir(exist_ok=True)
        shutil.copy(path, alone / path.name)
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, str(alone))  # type: ignore[no-untyped-call]
        served[pid] = sum(
            sample.value
            for family in registry.collect()
            for sample in family.samples
            if sample.name == "llm_gateway_requests_total" and sample.labels["route"] == ROUTE
        )
    return served


def _requests_total(text: str) -> float:
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "llm_gateway_requests_total" and sample.labels["route"] == ROUTE
    )


def test_two_workers_share_the_port_metrics_jobs_and_the_drain(tmp_path: Path) -> None:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}"
    upgrade(database_url)
    _seed_old_usage(database_url, 5)
    key = create_key(database_url, "workers", ["user"])
    metrics_dir = tmp_path / "metrics"
    upstream = HeldStreams()
    upstream.hold("held")
    with ExitStack() as stack:
        upstream_url = stack.enter_context(serve(upstream.app()))
        config = tmp_path / "gateway.yaml"
        settings = {
            "database_url": database_url,
            "shutdown_drain_seconds": 20,
            "usage_retention_days": 30,
            "models": [
                {"name": "mock", "provider": "mock"},
                {"name": "gpt", "provider": "openai", "base_url": f"{upstream_url}/v1"}
                | {"api_key_env": "UP_KEY"},
            ],
        }
        config.write_text(yaml.safe_dump(settings))
        environ = {"PROMETHEUS_MULTIPROC_DIR": str(metrics_dir)}
        gateway = stack.enter_context(gateway_process(config, environ, workers=2))
        log = Log(gateway)
        ready = log.until(count=2, events={"worker_ready"})
        assert len({line["pid"] for line in ready}) == 2

        # A job that must run once: one worker takes the retention lease, the other skips.
        ran = log.until(count=2, events={"retention_deleted", "retention_skipped"})
        assert sorted(str(line["event"]) for line in ran) == [
            "retention_deleted",
            "retention_skipped",
        ]

        # Traffic spreads: fresh connections until both workers have served some.
        body = {"model": "mock", "messages": [{"role": "user", "content": "hi"}]}
        headers = {"authorization": f"Bearer {key}"}

        def one_request(_: int) -> int:
            response = httpx.post(f"{gateway.url}{ROUTE}", json=body, headers=headers)
            return response.status_code

        sent = 0
        with ThreadPoolExecutor(16) as pool:
            while len([n for n in _per_worker_requests(metrics_dir).values() if n]) < 2:
                assert sent < 2000, _per_worker_requests(metrics_dir)
                assert set(pool.map(one_request, range(64))) == {200}
                sent += 64
        per_worker = _per_worker_requests(metrics_dir)
        assert sum(per_worker.values()) == sent

        # /metrics on whichever worker answers reports both workers' counts.
        for _ in range(4):
            assert _requests_total(httpx.get(f"{gateway.url}/metrics").text) == sent

        # SIGTERM to the supervisor: every worker drains; the in-flight stream finishes.
        client = stack.enter_context(httpx.Client(base_url=gateway.url, timeout=TIMEOUT))
        held = [{"role": "user", "content": "held"}]
        stream_body = {"model": "gpt", "stream": True, "messages": held}
        response = stack.enter_context(
            client.stream("POST", ROUTE, json=stream_body, headers=headers)
        )
        lines: Iterator[str] = response.iter_lines()
        assert upstream.started["held"].wait(TIMEOUT)
        gateway.process.send_signal(signal.SIGTERM)
        assert len(log.until(count=2, events={"shutdown_draining"})) >= 2
        assert client.get("/readyz").status_code == 503
        upstream.release["held"].set()
        assert [line for line in lines if line.startswith("data: ")][-1] == "data: [DONE]"
        assert gateway.process.wait(TIMEOUT) == 0
        assert len(log.until(count=2, events={"worker_stopped"})) == 2


def test_workers_drain_and_exit_when_the_supervisor_is_killed(tmp_path: Path) -> None:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}"
    upgrade(database_url)
    config = tmp_path / "gateway.yaml"
    settings = {"database_url": database_url, "models": [{"name": "mock", "provider": "mock"}]}
    config.write_text(yaml.safe_dump(settings))
    environ = {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics")}
    with gateway_process(config, environ, workers=2) as gateway:
        log = Log(gateway)
        log.until(count=2, events={"worker_ready"})
        gateway.process.kill()  # SIGKILL: the supervisor cannot forward anything
        # Linux's parent-death signal reaches each worker: it drains and ends, not serves on.
        assert len(log.until(count=2, events={"shutdown_draining"})) == 2
        assert len(log.until(count=2, events={"Finished server process"}, prefix=True)) == 2
