"""MCP servers added at run time: stored, applied to the running catalog, merged at start, and
never a way to run an arbitrary program."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.gateway import RunningGateway, running_gateway
from tests.support.mcp_servers import crashy_stdio_command, manifest_app
from tests.support.servers import serve

COMMAND, ARGS = crashy_stdio_command()
CONFIG_SERVER = {"name": "from-config", "transport": "http_manifest", "url": "http://127.0.0.1:9"}


@pytest.fixture
def manifest_url() -> Iterator[str]:
    with serve(manifest_app([])) as url:
        yield url


def gateway_on(database_url: str) -> Any:
    return running_gateway(
        database_url,
        mcp_servers=[CONFIG_SERVER],
        tool_catalog={"stdio_allow_list": [[COMMAND, *ARGS]], "discovery_timeout": 5},
    )


def client(gateway: RunningGateway, key: str) -> httpx.Client:
    return httpx.Client(
        base_url=gateway.url, headers={"authorization": f"Bearer {key}"}, timeout=30
    )


def tool_names(gateway: RunningGateway, key: str) -> set[str]:
    with client(gateway, key) as admin:
        return {tool["name"] for tool in admin.get("/v1/admin/tools").json()["data"]}


def test_a_server_added_at_run_time_is_applied_at_once_and_kept_across_restarts(
    database_url: str, manifest_url: str
) -> None:
    weather = {"name": "weather", "transport": "http_manifest", "url": manifest_url}
    with gateway_on(database_url) as gateway:
        admin_key = gateway.create_key("ops", ["admin"])
        with client(gateway, admin_key) as admin:
            added = admin.post("/v1/admin/servers", json={**weather, "roles": ["user"]})
            assert added.status_code == 201, added.text
            assert added.json()["state"] == "ready"
            assert admin.post("/v1/admin/servers", json=weather).status_code == 409
        assert "get_weather" in tool_names(gateway, admin_key)

    with gateway_on(database_url) as gateway:
        assert "get_weather" in tool_names(gateway, admin_key)
        with client(gateway, admin_key) as admin:
            changed = admin.put("/v1/admin/servers/weather", json={**weather, "roles": ["ops"]})
            assert changed.status_code == 200, changed.text
            tools = {t["name"]: t for t in admin.get("/v1/admin/tools").json()["data"]}
            assert tools["get_weather"]["policy"]["roles"] == ["ops"]
            assert admin.delete("/v1/admin/servers/weather").status_code == 200
            assert admin.delete("/v1/admin/servers/weather").status_code == 404
            audit = admin.get("/v1/admin/audit", params={"action": "server.saved"}).json()
            assert len(audit["data"]) == 2
        assert "get_weather" not in tool_names(gateway, admin_key)


def test_no_key_can_make_the_gateway_run_a_program_off_the_allow_list(database_url: str) -> None:
    with gateway_on(database_url) as gateway:
        admin_key = gateway.create_key("ops", ["admin"])
        user_key = gateway.create_key("team", ["user"])
        stdio = {"name": "shell", "transport": "stdio", "command": COMMAND, "args": ARGS}
        with client(gateway, admin_key) as admin:
            for refused in (
                {**stdio, "command": "/bin/sh", "args": ["-c", "touch /tmp/pwned"]},
                {**stdio, "args": [*ARGS, "--extra"]},
                {**stdio, "env": {"LD_PRELOAD": "/tmp/evil.so"}},
                {**CONFIG_SERVER, "name": "leak", "headers_env": {"x-key": "OPENAI_API_KEY"}},
            ):
                answer = admin.post("/v1/admin/servers", json=refused)
                assert answer.status_code == 400, refused
                assert answer.json()["error"]["type"] == "invalid_request_error"
            assert admin.post("/v1/admin/servers", json=stdio).status_code == 201
            assert admin.delete("/v1/admin/servers/from-config").status_code == 409
            assert admin.put("/v1/admin/servers/from-config", json=CONFIG_SERVER).status_code == 409
        with client(gateway, user_key) as user:
            assert user.post("/v1/admin/servers", json=stdio).status_code == 403
            assert user.put("/v1/admin/servers/shell", json=stdio).status_code == 403
            assert user.delete("/v1/admin/servers/shell").status_code == 403
