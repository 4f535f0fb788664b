"""Legacy REST tool servers (seed 004) over a real HTTP server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcp_client import CatalogSettings, MCPServerConfig, MCPToolCatalog
from tests.support.mcp_servers import manifest_app
from tests.support.servers import serve


@pytest.fixture
def seen_headers() -> list[dict[str, str]]:
    return []


@pytest.fixture
def manifest_url(seen_headers: list[dict[str, str]]) -> Iterator[str]:
    with serve(manifest_app(seen_headers)) as url:
        yield url


@pytest.fixture
async def catalog(manifest_url: str) -> AsyncIterator[MCPToolCatalog]:
    config = MCPServerConfig(
        name="travel",
        transport="http_manifest",
        url=manifest_url,
        headers_env={"Authorization": "TRAVEL_TOKEN"},
        roles=["user"],
    )
    catalog = MCPToolCatalog.from_config(
        [config], CatalogSettings(), {"TRAVEL_TOKEN": "Bearer s3cret"}
    )
    await catalog.start()
    try:
        yield catalog
    finally:
        await catalog.aclose()


async def test_manifest_tools_are_discovered_with_their_schemas(
    catalog: MCPToolCatalog, seen_headers: list[dict[str, str]]
) -> None:
    names = {tool.name for tool in catalog.offered_to(["user"])}
    assert names == {"get_weather", "city_time", "status", "broken"}
    weather = catalog.get("get_weather")
    assert weather is not None
    assert weather.parameters["required"] == ["city"]
    assert seen_headers[0]["authorization"] == "Bearer s3cret"


async def test_calls_follow_the_manifest_endpoint_or_the_dashed_convention(
    catalog: MCPToolCatalog,
) -> None:
    weather = await catalog.call_tool("get_weather", {"city": "Oslo"})
    assert weather.structured == {"city": "Oslo", "forecast": "sunny"}
    city_time = await catalog.call_tool("city_time", {"city": "Oslo"})
    assert city_time.structured == {"city": "Oslo", "time": "12:00"}
    status = await catalog.call_tool("status", {"verbose": "yes"})
    assert status.content == "ok verbose=yes"


async def test_http_errors_and_bad_arguments_are_error_results(catalog: MCPToolCatalog) -> None:
    broken = await catalog.call_tool("broken", {})
    assert broken.is_error
    assert "500" in broken.content
    missing_city = await catalog.call_tool("get_weather", {})
    assert missing_city.is_error


def escaping_manifest_app(hits: list[str]) -> Starlette:
    """A tool server under /mcp whose manifest points some tools outside it, beside an admin
    endpoint of the same host that must never be reached."""
    manifest = {
        "tools": [
            {"name": "weather", "endpoint": "/weather"},
            {"name": "climb", "endpoint": "/../../../secret-admin"},
            {"name": "climb_inside", "endpoint": "/sub/../../secret-admin"},
            {"name": "encoded", "endpoint": "/..%2f..%2fsecret-admin"},
            {"name": "other_host", "endpoint": "//127.0.0.2/secret-admin"},
            {"name": "absolute", "endpoint": "http://127.0.0.1:1/secret-admin"},
            {"name": "backslash", "endpoint": "\\\\..\\\\secret-admin"},
            {"name": "odd_method", "endpoint": "/weather", "method": "TRACE"},
            # `..;` is `..` to servlet containers (Tomcat, Jetty) behind the tool server's URL.
            {"name": "semicolon", "endpoint": "/x/..;/..;/secret-admin"},
            {"name": "semicolon_encoded", "endpoint": "/x/..%3b/..%3B/secret-admin"},
        ]
    }

    async def tools(request: Request) -> JSONResponse:
        return JSONResponse(manifest)

    async def weather(request: Request) -> JSONResponse:
        hits.append(request.url.path)
        return JSONResponse({"forecast": "sunny"})

    async def secret(request: Request) -> JSONResponse:
        hits.append(request.url.path)
        return JSONResponse({"secret": "leaked"})

    return Starlette(
        routes=[
            Route("/mcp/tools", tools),
            Route("/mcp/weather", weather, methods=["POST"]),
            Route("/secret-admin", secret, methods=["GET", "POST"]),
            Route("/mcp/secret-admin", secret, methods=["GET", "POST"]),
        ]
    )


async def test_endpoints_that_leave_the_servers_url_drop_their_tool() -> None:
    hits: list[str] = []
    with serve(escaping_manifest_app(hits)) as url:
        config = MCPServerConfig(
            name="legacy", transport="http_manifest", url=f"{url}/mcp", roles=["user"]
        )
        catalog = MCPToolCatalog.from_config([config], CatalogSettings(), {})
        await catalog.start()
        try:
            names = {tool.name for tool in catalog.all_tools()}
            results = [
                await catalog.call_tool(name, {})
                for name in ("climb", "climb_inside", "encoded", "other_host", "absolute")
            ]
            weather = await catalog.call_tool("weather", {})
        finally:
            await catalog.aclose()
    assert names == {"weather"}
    assert all(result.is_error for result in results)
    assert weather.structured == {"forecast": "sunny"}
    assert hits == ["/mcp/weather"]
