"""npm's @modelcontextprotocol/server-everything in streamableHttp mode, restarted under a live
catalog. It answers a session it no longer knows with 400 "No valid session ID provided"
(not the spec's 404); the client must treat that the same way."""

from __future__ import annotations

import asyncio

from mcp_client import CatalogSettings, MCPServerConfig, MCPToolCatalog
from tests.support.mcp_servers import ServerProcess, free_port
from tests.support.node_tools import node_tools


async def test_after_a_restart_the_next_call_succeeds() -> None:
    tools = await asyncio.to_thread(node_tools)
    port = free_port()
    server = ServerProcess(
        [*tools.server_everything, "streamableHttp"],
        ready_line=r"listening on port",
        env={"PORT": str(port)},
    )
    await asyncio.to_thread(server.start)
    try:
        config = MCPServerConfig(
            name="everything",
            transport="streamable_http",
            url=f"http://127.0.0.1:{port}/mcp",
            roles=["user"],
        )
        settings = CatalogSettings(refresh_interval=300, ping_interval=300)
        catalog = MCPToolCatalog.from_config([config], settings, {})
        await catalog.start()
        try:
            assert catalog.status()["everything"].state == "ready"
            assert (await catalog.call_tool("echo", {"message": "one"})).content == "Echo: one"
            await asyncio.to_thread(server.restart)

            after = await catalog.call_tool("echo", {"message": "two"})

            assert (after.content, after.is_error) == ("Echo: two", False)
            assert (await catalog.call_tool("get-sum", {"a": 2, "b": 3})).content == (
                "The sum of 2 and 3 is 5."
            )
            assert catalog.status()["everything"].state == "ready"
        finally:
            await catalog.aclose()
    finally:
        await asyncio.to_thread(server.stop)
