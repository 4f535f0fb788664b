"""Keeping servers alive: a stdio server that dies mid-call is restarted and serves again."""

from __future__ import annotations

from mcp_client import CatalogSettings, MCPServerConfig, MCPToolCatalog
from tests.support.mcp_servers import crashy_stdio_command


async def test_a_stdio_server_that_crashes_mid_call_is_restarted() -> None:
    command, args = crashy_stdio_command()
    config = MCPServerConfig(
        name="crashy", transport="stdio", command=command, args=args, roles=["user"]
    )
    settings = CatalogSettings(retry_initial=0.05, retry_max=0.2)
    catalog = MCPToolCatalog.from_config([config], settings, {})
    await catalog.start()
    try:
        first_pid = (await catalog.call_tool("pid", {})).content
        crashed = await catalog.call_tool("crash", {}, timeout=20)
        assert crashed.is_error
        assert "closed" in crashed.content or "lost" in crashed.content
        assert crashed.outcome_unknown  # it died while the call was out: it may have run

        def restarted() -> bool:
            return catalog.status()["crashy"].state == "ready" and catalog.get("pid") is not None

        assert await catalog.wait_for(restarted, timeout=20)
        second = await catalog.call_tool("pid", {})
        assert not second.is_error
        assert second.content != first_pid
    finally:
        await catalog.aclose()
