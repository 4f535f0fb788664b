"""The soak's deployment: its constants, the gateway's config, a replica process, its keys
(``bench/soak.py`` runs it)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench import procstat

ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "docs" / "reliability.md"
ADMIN_KEY = "sk-soak-admin-" + uuid.uuid4().hex
TIMEOUT = 60.0  # per request: a longer wait is a hang
KINDS = ("chat", "stream", "responses", "embeddings", "conversation", "mcp")
MODEL_ROUTES = {
    "chat": "/v1/chat/completions",
    "stream": "/v1/chat/completions",
    "responses": "/v1/responses",
    "embeddings": "/v1/embeddings",
}
RECOVERY_LIMIT = 60.0
# The tool loop's turn timeout (600 s by default): the longest a turn may take, and when the
# sweeper ends one that a fault left unfinished (the soak's own turns take under a second).
TURN_TIMEOUT = 60
# A key with this budget sends BURST requests at once, each priced one dollar, on both replicas
# and on the routes that spend (chat, streams, Responses): what got through is what it spent.
BUDGET = 5.0
PRICE = 1.0
BURST = 30


def config(
    database_url: str, redis_url: str, fake_url: str, tool_url: str, spool: Path
) -> dict[str, object]:
    """``spool``: the usage spool both replicas and replica 2's restarts share (as the workers
    and restarts of one pod share its emptyDir), so the kill -9 loses no usage row."""
    upstream = {"provider": "openai", "base_url": f"{fake_url}/v1", "api_key_env": "SOAK_KEY"}
    return {
        "database_url": database_url,
        "usage_spool_dir": str(spool),
        "redis_url": redis_url,
        "redis_key_prefix": f"soak-{uuid.uuid4().hex[:8]}:",
        "log_level": "warning",
        "tool_loop": {"turn_timeout_seconds": TURN_TIMEOUT},
        "models": [
            {"name": "chat", **upstream},
            {"name": "embed", "kind": "embedding", **upstream},
            {"name": "priced", "price": {"per_request": PRICE}, **upstream},
            {
                "name": "agent",
                "provider": "mock",
                "script": [
                    {"tool_calls": [{"name": "record", "arguments": {"label": "soak"}}]},
                    {"text": "done: {last_tool_result}"},
                ],
            },
        ],
        "mcp_servers": [
            {
                "name": "counting",
                "transport": "streamable_http",
                "url": tool_url,
                "trusted": True,
                "roles": ["user"],
                "call_timeout": 10,
                "tools": {"record": {"requires_approval": True}},
            }
        ],
    }


@dataclass
class Replica:
    name: str
    port: int
    config: Path
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        command = [str(ROOT / ".venv/bin/llm-gateway"), "serve", "--config", str(self.config)]
        command += ["--host", "127.0.0.1", "--port", str(self.port), "--workers", "1"]
        env = {**os.environ, "SOAK_KEY": "sk-upstream", "GATEWAY_ADMIN_KEY": ADMIN_KEY}
        log = self.config.with_name(f"{self.name}.log").open("ab")
        self.process = subprocess.Popen(command, env=env, stdout=log, stderr=log)
        self.started_at = time.monotonic()

    def wait_ready(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200:
                    return
            time.sleep(0.2)
        raise RuntimeError(f"replica {self.name} did not become ready")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()

    def rss_mb(self) -> float:
        return procstat.sample(self.process.pid).rss_mb if self.process else 0.0


def create_key(replica: Replica, name: str, limits: dict[str, float] | None = None) -> str:
    response = httpx.post(
        f"{replica.url}/v1/admin/keys",
        json={"name": name, "roles": ["user"], "limits": limits},
        headers={"Authorization": f"Bearer {ADMIN_KEY}"},
        timeout=30,
    )
    response.raise_for_status()
    key: str = response.json()["key"]
    return key
