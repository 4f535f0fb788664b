"""A streamable HTTP server that restarts or dies under a live catalog: the SDK's MCPServer run
as a subprocess on 127.0.0.1, noting each execution in a file."""

from __future__ import annotations

import asyncio
from pathlib import Path

from mcp_client import CatalogSettings, MCPServerConfig, MCPToolCatalog
from tests.support.mcp_servers import counting_server


def _catalog(url: str, settings: CatalogSettings) -> MCPToolCatalog:
    config = MCPServerConfig(name="counting", transport="streamable_http", url=url, roles=["user"])
    return MCPToolCatalog.from_config([config], settings, {})


async def test_after_a_restart_the_next_calls_succeed_and_none_runs_twice(tmp_path: Path) -> None:
    executions = tmp_path / "executions"
    with counting_server(executions) as (url, server):
        # No ping or refresh in the test's lifetime: the calls themselves meet the stale session.
        catalog = _catalog(url, CatalogSettings(refresh_interval=300, ping_interval=300))
        await catalog.start()
        try:
            assert (await catalog.call_tool("record", {"label": "before"})).content == (
                "recorded before"
            )
            await asyncio.to_thread(server.restart)

            results = await asyncio.gather(
                *(catalog.call_tool("record", {"label": label}) for label in ("a", "b", "c"))
            )

            assert [r.content for r in results] == ["recorded a", "recorded b", "recorded c"]
            lines = executions.read_text(encoding="utf-8").splitlines()
            assert lines[0] == "before"
            assert sorted(lines[1:]) == ["a", "b", "c"]
            assert catalog.status()["counting"].state == "ready"
        finally:
            await catalog.aclose()


async def test_a_server_that_dies_while_idle_is_degraded_then_recovers(tmp_path: Path) -> None:
    with counting_server(tmp_path / "executions") as (url, server):
        settings = CatalogSettings(
            refresh_interval=300, ping_interval=0.1, retry_initial=0.05, retry_max=0.2
        )
        catalog = _catalog(url, settings)
        await catalog.start()
        try:
            assert catalog.status()["counting"].state == "ready"
            await asyncio.to_thread(server.stop)

            def degraded() -> bool:
                return catalog.status()["counting"].state == "degraded"

            assert await catalog.wait_for(degraded, timeout=10)
            assert catalog.status()["counting"].reason
            assert catalog.get("record") is None

            await asyncio.to_thread(server.start)

            def ready() -> bool:
                return catalog.status()["counting"].state == "ready"

            assert await catalog.wait_for(ready, timeout=20)
            assert (await catalog.call_tool("echo", {"text": "back"})).content == "back"
        finally:
            await catalog.aclose()


async def test_a_per_server_ping_interval_wins_over_the_catalogs(tmp_path: Path) -> None:
    with counting_server(tmp_path / "executions") as (url, server):
        config = MCPServerConfig(
            name="counting",
            transport="streamable_http",
            url=url,
            roles=["user"],
            ping_interval=0.1,
        )
        settings = CatalogSettings(refresh_interval=300, ping_interval=300)
        catalog = MCPToolCatalog.from_config([config], settings, {})
        await catalog.start()
        try:
            await asyncio.to_thread(server.stop)
            assert await catalog.wait_for(
                lambda: catalog.status()["counting"].state == "degraded", timeout=10
            )
        finally:
            await catalog.aclose()
