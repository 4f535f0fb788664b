"""The tool catalog at size: 20 servers x 50 tools, as ``/v1/tools`` and a turn's tool assembly.

    .venv/bin/python -m bench.catalog

In one process: the gateway app (``create_app``, SQLite, a real key) over a static catalog of
1,000 tools, each with a small JSON schema, every one offered to the ``user`` role, pinning off
(a held tool is skipped early and would flatter the numbers). Timed, one at a time:

- ``GET /v1/tools`` through HTTP on a kept-alive connection (uvicorn in a thread);
- the per-turn assembly a model call makes (``TurnRunner._model_call``): the tools visible to
  the key's roles, as ``ToolSpec`` tuples, called directly.
"""

from __future__ import annotations

import asyncio
import os
import socket
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from bench.stats import percentile
from db.engine import create_engine, session_factory
from gateway.app import create_app
from gateway.keys import KeyStore
from gateway.settings import Settings
from llm_service.types import ToolSpec
from mcp_client.types import ServerHealth, StandardizedTool, ToolResult, definition_hash
from migrations.commands import upgrade

SERVERS, TOOLS_PER_SERVER = 20, 50
GOAL_MS = 1.0


class StaticCatalog:
    """A fixed catalog (the ToolCatalog protocol) that never calls a tool."""

    def __init__(self, servers: int, per_server: int) -> None:
        self._tools = {}
        for s in range(servers):
            for t in range(per_server):
                name = f"server{s}__tool{t}"
                schema = {
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "what to look up"},
                        "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                    },
                    "required": ["query"],
                }
                description = f"Tool {t} of server {s}: looks something up."
                self._tools[name] = StandardizedTool(
                    name=name,
                    description=description,
                    parameters=schema,
                    server=f"server{s}",
                    original_name=f"tool{t}",
                    definition_hash=definition_hash(name, description, schema),
                    roles=frozenset({"user"}),
                )

    async def start(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    def status(self) -> Mapping[str, ServerHealth]:
        return {}

    def bundle_names(self) -> list[str]:
        return []

    def get_tools_for_llm(
        self, roles: Iterable[str], bundle: str | None = None
    ) -> list[StandardizedTool]:
        wanted = set(roles)
        return [tool for tool in self._tools.values() if not tool.roles.isdisjoint(wanted)]

    def get(self, name: str) -> StandardizedTool | None:
        return self._tools.get(name)

    def all_tools(self) -> list[StandardizedTool]:
        return list(self._tools.values())

    async def call_tool(
        self, name: str, arguments: dict[str, Any], timeout: float | None = None
    ) -> ToolResult:
        return ToolResult("unused", is_error=True)


def _key(database_url: str) -> str:
    async def make() -> str:
        engine = create_engine(database_url)
        try:
            key, _ = await KeyStore(session_factory(engine), 0).create("bench", ["user"])
            return key
        finally:
            await engine.dispose()

    return asyncio.run(make())


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.up = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.up.set()


@contextmanager
def _serving(app: Any) -> Iterator[str]:
    sock = socket.create_server(("127.0.0.1", 0))
    server = _Server(uvicorn.Config(app, log_config=None, access_log=False, loop="uvloop"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        if not server.up.wait(60):
            raise RuntimeError("the gateway did not start")
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


def _p50_ms(times: list[float]) -> float:
    return percentile(sorted(times), 0.5) * 1000


def measure(requests: int = 500) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-catalog-") as tmp:
        database_url = f"sqlite+aiosqlite:///{Path(tmp) / 'gateway.db'}"
        upgrade(database_url)
        key = _key(database_url)
        settings = Settings.model_validate(
            {
                "database_url": database_url,
                "models": [{"name": "mock", "provider": "mock"}],
                "tool_pinning": {"enabled": False},
            }
        )
        app = create_app(settings, {}, tools=StaticCatalog(SERVERS, TOOLS_PER_SERVER))
        with _serving(app) as url, httpx.Client(base_url=url) as client:
            headers = {"authorization": f"Bearer {key}"}
            listed = client.get("/v1/tools", headers=headers).json()["data"]
            assert len(listed) == SERVERS * TOOLS_PER_SERVER, len(listed)
            http_times = []
            for _ in range(requests):
                start = time.perf_counter()
                client.get("/v1/tools", headers=headers).raise_for_status()
                http_times.append(time.perf_counter() - start)
            governance = app.state.services.tools
            roles = frozenset({"user"})
            assembly_times = []
            for _ in range(requests):
                start = time.perf_counter()
                tools = governance.visible_tools(roles, None)
                tuple(ToolSpec(t.name, t.description, t.parameters) for t in tools)
                assembly_times.append(time.perf_counter() - start)
    return {
        "GET /v1/tools p50 ms": _p50_ms(http_times),
        "per-turn tool assembly p50 ms": _p50_ms(assembly_times),
        "load": os.getloadavg()[0],
    }


def main() -> int:
    results = measure()
    print(f"{SERVERS} servers x {TOOLS_PER_SERVER} tools (goal: each under {GOAL_MS:g} ms)")
    for name, value in results.items():
        print(f"{name}: {value:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
