"""The tool servers' door: the runtime servers it takes, and those it refuses."""

from __future__ import annotations

import asyncio

import pytest

from db.engine import create_engine, session_factory
from llm_service.errors import InvalidRequest
from mcp_client import CatalogSettings, LocalTool, MCPServerConfig, MCPToolCatalog
from migrations.commands import upgrade
from tool_servers import ServerConflict, build_tool_servers


async def test_a_catalog_given_by_an_embedding_program_takes_no_runtime_servers(
    sqlite_url: str,
) -> None:
    await asyncio.to_thread(upgrade, sqlite_url)
    engine = create_engine(sqlite_url)
    settings = CatalogSettings()
    catalog = MCPToolCatalog(settings)
    catalog.register_local_tools("desk", [LocalTool("ping", "Answers pong.", {}, _pong)], [])
    servers = build_tool_servers(
        session_factory(engine),
        catalog_settings=settings,
        config_servers=[],
        environ={},
        tools=catalog,
    )
    await servers.start()
    try:
        server = MCPServerConfig(name="clock", transport="stdio", command="mcp-server-time")
        assert await servers.stored() == {}
        with pytest.raises(ServerConflict):
            await servers.put(server, actor_key_id=1, create=True)
        assert set(servers.status()) == {"desk"}
    finally:
        await servers.aclose()
        await engine.dispose()


async def _pong(arguments: dict[str, object]) -> str:
    return "pong"


async def test_a_runtime_server_off_the_allow_list_is_refused(sqlite_url: str) -> None:
    await asyncio.to_thread(upgrade, sqlite_url)
    engine = create_engine(sqlite_url)
    servers = build_tool_servers(
        session_factory(engine), catalog_settings=CatalogSettings(), config_servers=[], environ={}
    )
    await servers.start()
    try:
        server = MCPServerConfig(name="shell", transport="stdio", command="/bin/sh")
        with pytest.raises(InvalidRequest) as refused:
            await servers.put(server, actor_key_id=1, create=True)
        assert refused.value.param == "command"
        assert await servers.stored() == {}
        assert servers.status() == {}
    finally:
        await servers.aclose()
        await engine.dispose()
