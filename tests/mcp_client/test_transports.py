"""The SDK transports against real servers: streamable HTTP, SSE and PyPI's mcp-server-time."""

from __future__ import annotations

import asyncio

from mcp_client import CatalogSettings, MCPServerConfig, MCPToolCatalog
from tests.support.mcp_servers import Gate, RequireToken, demo_server
from tests.support.servers import serve

UNAUTHORIZED = "authentication required / token rejected (HTTP 401)"


async def test_streamable_http_discovery_and_cancellation() -> None:
    demo = demo_server("remote")
    with serve(demo.server.streamable_http_app()) as url:
        config = MCPServerConfig(
            name="remote",
            transport="streamable_http",
            url=f"{url}/mcp",
            headers_env={"X-Token": "REMOTE_TOKEN"},
            roles=["user"],
        )
        catalog = MCPToolCatalog.from_config([config], CatalogSettings(), {"REMOTE_TOKEN": "t0k"})
        await catalog.start()
        try:
            assert catalog.status()["remote"].state == "ready"
            assert (await catalog.call_tool("echo", {"text": "hi"})).content == "remote:hi"
            hung = await catalog.call_tool("hang", {}, timeout=0.3)
            assert hung.is_error
            assert await asyncio.to_thread(demo.hang_cancelled.wait, 10)
        finally:
            await catalog.aclose()


async def test_a_missing_header_secret_degrades_the_server_with_a_reason() -> None:
    config = MCPServerConfig(
        name="remote",
        transport="streamable_http",
        url="http://127.0.0.1:9/mcp",
        headers_env={"Authorization": "REMOTE_TOKEN"},
    )
    catalog = MCPToolCatalog.from_config([config], CatalogSettings(), {})
    await catalog.start()
    try:
        status = catalog.status()["remote"]
        assert status.state == "degraded"
        assert (
            status.reason == "environment variable REMOTE_TOKEN (header Authorization) is not set"
        )
    finally:
        await catalog.aclose()


async def test_sse_transport() -> None:
    demo = demo_server("legacy-sse")
    with serve(demo.server.sse_app()) as url:
        config = MCPServerConfig(name="old", transport="sse", url=f"{url}/sse", roles=["user"])
        catalog = MCPToolCatalog.from_config([config], CatalogSettings(), {})
        await catalog.start()
        try:
            result = await catalog.call_tool("echo", {"text": "over sse"})
            assert result.content == "legacy-sse:over sse"
        finally:
            await catalog.aclose()


async def test_a_server_down_at_start_comes_up_later() -> None:
    demo = demo_server("late")
    gate = Gate(demo.server.streamable_http_app())
    with serve(gate) as url:
        config = MCPServerConfig(
            name="late", transport="streamable_http", url=f"{url}/mcp", roles=["user"]
        )
        settings = CatalogSettings(retry_initial=0.05, retry_max=0.2)
        catalog = MCPToolCatalog.from_config([config], settings, {})
        await catalog.start()
        try:
            status = catalog.status()["late"]
            assert status.state == "degraded"
            assert status.reason
            assert catalog.offered_to(["user"]) == []
            assert (await catalog.call_tool("echo", {"text": "x"})).is_error
            gate.open = True
            assert await catalog.wait_for(lambda: catalog.get("echo") is not None, timeout=20)
            assert catalog.status()["late"].state == "ready"
        finally:
            await catalog.aclose()


async def test_pypi_mcp_server_time_over_stdio() -> None:
    # A bare name: resolved beside this interpreter although .venv/bin may not be on PATH.
    config = MCPServerConfig(
        name="time",
        transport="stdio",
        command="mcp-server-time",
        args=["--local-timezone", "UTC"],
        roles=["user"],
        tools={"convert_time": {"requires_approval": True}},  # type: ignore[dict-item]
    )
    catalog = MCPToolCatalog.from_config([config], CatalogSettings(), {})
    await catalog.start()
    try:
        names = {tool.name for tool in catalog.offered_to(["user"])}
        assert names == {"get_current_time", "convert_time"}
        convert = catalog.get("convert_time")
        assert convert is not None
        assert convert.requires_approval
        assert convert.annotations["readOnlyHint"] is True
        result = await catalog.call_tool("get_current_time", {"timezone": "Europe/Paris"})
        assert not result.is_error
        assert "Europe/Paris" in result.content
        bad = await catalog.call_tool("get_current_time", {"timezone": "UTC", "extra": 1})
        assert bad.is_error
    finally:
        await catalog.aclose()


async def test_a_rejected_token_reads_as_such_not_as_a_protocol_error() -> None:
    demo = demo_server("guarded")
    guard = RequireToken(demo.server.streamable_http_app(), token="right")
    with serve(guard) as url:
        config = MCPServerConfig(
            name="guarded",
            transport="streamable_http",
            url=f"{url}/mcp",
            headers_env={"Authorization": "GUARD_TOKEN"},
            roles=["user"],
        )
        settings = CatalogSettings(ping_interval=300)
        wrong = MCPToolCatalog.from_config([config], settings, {"GUARD_TOKEN": "Bearer wrong"})
        await wrong.start()
        try:
            status = wrong.status()["guarded"]
            assert (status.state, status.reason) == ("degraded", UNAUTHORIZED)
        finally:
            await wrong.aclose()

        catalog = MCPToolCatalog.from_config([config], settings, {"GUARD_TOKEN": "Bearer right"})
        await catalog.start()
        try:
            assert (await catalog.call_tool("echo", {"text": "in"})).content == "guarded:in"
            guard.token = "rotated"  # the server no longer accepts what it did a moment ago
            refused = await catalog.call_tool("echo", {"text": "again"})
            assert refused.is_error
            assert refused.content == f"the tool server refused the call: {UNAUTHORIZED}"
        finally:
            await catalog.aclose()


async def test_a_rejected_token_over_sse_reads_as_such() -> None:
    demo = demo_server("guarded-sse")
    with serve(RequireToken(demo.server.sse_app(), token="right")) as url:
        config = MCPServerConfig(
            name="old",
            transport="sse",
            url=f"{url}/sse",
            headers_env={"Authorization": "GUARD_TOKEN"},
        )
        catalog = MCPToolCatalog.from_config(
            [config], CatalogSettings(), {"GUARD_TOKEN": "Bearer wrong"}
        )
        await catalog.start()
        try:
            status = catalog.status()["old"]
            assert (status.state, status.reason) == ("degraded", UNAUTHORIZED)
        finally:
            await catalog.aclose()
