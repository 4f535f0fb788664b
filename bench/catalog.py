"""The tool catalog at size: 20 servers x 50 tools, as ``/v1/tools`` and a turn's tool assembly.

    .venv/bin/python -m bench.catalog

In one process: the gateway app (``create_app``, SQLite, a real key) over a static catalog of
1,000 tools, each with a small JSON schema, every one offered to the ``user`` role, pinning off
(a held tool is skipped early and would flatter the numbers). Timed, one at a time:

- ``GET /v1/tools`` through HTTP on a kept-alive connection (uvicorn in a thread), read by a bare
  socket client: httpx parsing the ~400 KB answer in the same process (one GIL) cost more than
  the gateway's work and was measured with it; ``GET /v1/models`` the same way, as the floor
  (auth, the log line, the route stack) under it;
- the per-turn assembly a model call makes (``TurnRunner._model_call``): the tools visible to
  the key's roles, as ``ToolSpec`` tuples, called directly; and the same from
  ``Offer.specs``, which keeps the tuple with the offer;
- what a change costs the next caller: the visible tools asked for right after one server's
  tool list changed, and for a role set not asked for before (everything worked out anew).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import uvicorn

from accounts.keys import KeyStore
from bench.stats import percentile
from db.engine import create_engine, session_factory
from gateway.settings import Settings
from llm_service.types import ToolSpec
from mcp_client.types import (
    CatalogPart,
    ServerHealth,
    StandardizedTool,
    ToolResult,
    definition_hash,
)
from migrations.commands import upgrade
from server.app import create_app

SERVERS, TOOLS_PER_SERVER = 20, 50
GOAL_MS = 1.0


class StaticCatalog:
    """A fixed catalog (the ToolCatalog protocol, with its servers' parts as the MCP catalog
    gives them) that never calls a tool."""

    def __init__(self, servers: int, per_server: int) -> None:
        self._tools: dict[str, StandardizedTool] = {}
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

        self._parts = {
            f"server{s}": CatalogPart(
                s + 1, tuple(t for t in self._tools.values() if t.server == f"server{s}")
            )
            for s in range(servers)
        }

    def parts(self) -> Mapping[str, CatalogPart]:
        return self._parts

    def change(self, server: str) -> None:
        """One server's tool list changed (a tool redefined), as a discovery would report it."""
        part = self._parts[server]
        changed = replace(
            part.tools[0], description=f"{part.tools[0].description} (v{part.generation})"
        )
        tools = (changed, *part.tools[1:])
        self._tools[changed.name] = changed
        self._parts = {**self._parts, server: CatalogPart(part.generation + 1000, tools)}

    async def start(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    def status(self) -> Mapping[str, ServerHealth]:
        return {}

    def bundle_names(self) -> list[str]:
        return []

    def get(self, name: str) -> StandardizedTool | None:
        return self._tools.get(name)

    def all_tools(self) -> list[StandardizedTool]:
        return list(self._tools.values())

    async def run(
        self, tool: StandardizedTool, arguments: dict[str, Any], timeout: float | None = None
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


class _Client:
    """HTTP/1.1 on one kept-alive socket, reading exactly Content-Length bytes of each answer."""

    def __init__(self, url: str, key: str) -> None:
        self._host, port = url.removeprefix("http://").split(":")
        self._sock = socket.create_connection((self._host, int(port)))
        self._key = key

    def get(self, path: str) -> bytes:
        request = f"GET {path} HTTP/1.1\r\nhost: {self._host}\r\nauthorization: Bearer {self._key}"
        self._sock.sendall(f"{request}\r\n\r\n".encode())
        data = b""
        while b"\r\n\r\n" not in data:
            data += self._sock.recv(65536)
        head, _, body = data.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(head.decode())
        length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))  # type: ignore[union-attr]
        chunks = [body]
        received = len(body)
        while received < length:
            chunk = self._sock.recv(1 << 20)
            chunks.append(chunk)
            received += len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        self._sock.close()


def _timed(requests: int, work: Callable[[], object]) -> list[float]:
    times = []
    for _ in range(requests):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return times


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
        catalog = StaticCatalog(SERVERS, TOOLS_PER_SERVER)
        app = create_app(settings, {}, tools=catalog)
        with _serving(app) as url:
            client = _Client(url, key)
            try:
                listed = json.loads(client.get("/v1/tools"))["data"]
                assert len(listed) == SERVERS * TOOLS_PER_SERVER, len(listed)
                http_times = _timed(requests, lambda: client.get("/v1/tools"))
                floor = _timed(requests, lambda: client.get("/v1/models"))
            finally:
                client.close()
        governance = app.state.services.tools
        roles = frozenset({"user"})

        def assemble() -> None:
            tools = governance.offer(roles, None).tools
            tuple(ToolSpec(t.name, t.description, t.parameters) for t in tools)

        assembly_times = _timed(requests, assemble)
        kept_specs = _timed(requests, lambda: governance.offer(roles, None).specs)
        one_server = _timed(50, lambda: (catalog.change("server7"), assemble()))
        roles_seen = iter(range(10**6))
        fresh = _timed(50, lambda: governance.offer({"user", f"r{next(roles_seen)}"}).tools)
    return {
        "GET /v1/tools p50 ms": _p50_ms(http_times),
        "GET /v1/models p50 ms (the same stack, a small answer)": _p50_ms(floor),
        "per-turn tool assembly p50 ms": _p50_ms(assembly_times),
        "assembly from the offer's kept ToolSpecs (Offer.specs) p50 ms": _p50_ms(kept_specs),
        "assembly after one server's tools changed p50 ms": _p50_ms(one_server),
        "visible tools for a new role set p50 ms": _p50_ms(fresh),
        "load": os.getloadavg()[0],
    }


def main() -> int:
    results = measure()
    print(f"{SERVERS} servers x {TOOLS_PER_SERVER} tools (goal: each under {GOAL_MS:g} ms)")
    for name, value in results.items():
        print(f"{name}: {value:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
