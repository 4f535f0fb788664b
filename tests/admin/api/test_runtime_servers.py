"""MCP servers added at run time: stored, applied to the running catalog, merged at start, never
a way to run an arbitrary program or call an arbitrary address, and held for review unless
trusted."""

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


def gateway_on(database_url: str, http_allow_list: list[str]) -> Any:
    return running_gateway(
        database_url,
        mcp_servers=[CONFIG_SERVER],
        tool_catalog={
            "stdio_allow_list": [[COMMAND, *ARGS]],
            "http_allow_list": http_allow_list,
            "discovery_timeout": 5,
        },
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
    with gateway_on(database_url, [manifest_url]) as gateway:
        admin_key = gateway.create_key("ops", ["admin"])
        with client(gateway, admin_key) as admin:
            added = admin.post("/v1/admin/servers", json={**weather, "roles": ["user"]})
            assert added.status_code == 201, added.text
            assert added.json()["state"] == "ready"
            assert admin.post("/v1/admin/servers", json=weather).status_code == 409
        assert "get_weather" in tool_names(gateway, admin_key)

    # The operator narrowed the allow-list: the stored server is skipped, not started.
    with gateway_on(database_url, []) as gateway:
        assert "get_weather" not in tool_names(gateway, admin_key)

    with gateway_on(database_url, [manifest_url]) as gateway:
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
    with gateway_on(database_url, []) as gateway:
        admin_key = gateway.create_key("ops", ["admin"])
        user_key = gateway.create_key("team", ["user"])
        stdio = {"name": "shell", "transport": "stdio", "command": COMMAND, "args": ARGS}
        with client(gateway, admin_key) as admin:
            for refused, param in (
                ({**stdio, "command": "/bin/sh", "args": ["-c", "touch /tmp/pwned"]}, "command"),
                ({**stdio, "args": [*ARGS, "--extra"]}, "command"),
                ({**stdio, "env": {"LD_PRELOAD": "/tmp/evil.so"}}, "env"),
                ({**stdio, "cwd": "/tmp"}, "cwd"),
                ({**CONFIG_SERVER, "name": "leak", "headers_env": {"x": "OPENAI_API_KEY"}}, None),
            ):
                answer = admin.post("/v1/admin/servers", json=refused)
                assert answer.status_code == 400, refused
                error = answer.json()["error"]
                assert error["type"] == "invalid_request_error"
                assert error["param"] == (param or "headers_env")
            assert admin.post("/v1/admin/servers", json=stdio).status_code == 201
            assert admin.delete("/v1/admin/servers/from-config").status_code == 409
            assert admin.put("/v1/admin/servers/from-config", json=CONFIG_SERVER).status_code == 409
        with client(gateway, user_key) as user:
            assert user.post("/v1/admin/servers", json=stdio).status_code == 403
            assert user.put("/v1/admin/servers/shell", json=stdio).status_code == 403
            assert user.delete("/v1/admin/servers/shell").status_code == 403


@pytest.mark.parametrize("transport", ["streamable_http", "sse", "http_manifest"])
def test_no_key_can_make_the_gateway_call_an_address_off_the_allow_list(
    sqlite_url: str, transport: str
) -> None:
    # Nothing listens on port 9: the accepted servers are stored and degraded, never reached.
    allowed = ["http://127.0.0.1:9/tools", "https://localhost:9"]
    with gateway_on(sqlite_url, allowed) as gateway:
        admin_key = gateway.create_key("ops", ["admin"])
        server = {"name": "remote", "transport": transport}
        with client(gateway, admin_key) as admin:
            for url in (
                "http://127.0.0.1:9/toolsx/mcp",  # not under the path prefix
                "http://127.0.0.1:9/tools/../admin",  # resolves outside it
                "http://127.0.0.1:9/tools/%2e%2e/admin",  # the same, encoded
                "http://127.0.0.1:10/tools/mcp",  # another port
                "https://127.0.0.1:9/tools/mcp",  # another scheme
                "https://localhost:9.evil.net/mcp",  # not even a port
                "https://localhost.evil.net:9/mcp",  # a text prefix, another host
                "https://localhost:9@169.254.169.254/latest",  # user info: another host
                "http://169.254.169.254/latest/meta-data",
                "http://xn--a.xn--/mcp",  # a malformed IDNA host
                "file:///etc/passwd",
            ):
                answer = admin.post("/v1/admin/servers", json={**server, "url": url})
                assert answer.status_code == 400, url
                error = answer.json()["error"]
                assert error["param"] == "url", url
                assert "url" in error["message"]
            for url in ("http://127.0.0.1:9/tools/mcp", "https://LOCALHOST.:9/sse"):
                answer = admin.post("/v1/admin/servers", json={**server, "url": url})
                assert answer.status_code == 201, answer.text
                assert admin.delete("/v1/admin/servers/remote").status_code == 200


def test_with_an_empty_http_allow_list_no_http_server_can_be_added(sqlite_url: str) -> None:
    with gateway_on(sqlite_url, []) as gateway:
        admin_key = gateway.create_key("ops", ["admin"])
        with client(gateway, admin_key) as admin:
            answer = admin.post(
                "/v1/admin/servers",
                json={"name": "local", "transport": "streamable_http", "url": gateway.url},
            )
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == "url"
    assert "`tool_catalog.http_allow_list` is empty" in answer.json()["error"]["message"]


def test_a_runtime_servers_tools_wait_for_review_unless_it_is_trusted(
    sqlite_url: str, manifest_url: str
) -> None:
    with gateway_on(sqlite_url, [manifest_url]) as gateway:
        admin_key = gateway.create_key("ops", ["admin"])
        user_key = gateway.create_key("team", ["user"])
        weather = {"transport": "http_manifest", "url": manifest_url, "roles": ["user"]}
        with client(gateway, admin_key) as admin, client(gateway, user_key) as user:
            assert admin.post("/v1/admin/servers", json={**weather, "name": "w"}).status_code == 201
            assert user.get("/v1/tools").json()["data"] == []
            held = admin.get("/v1/admin/tool-reviews").json()["data"]
            assert {review["server"] for review in held} == {"w"}
            [review] = [r for r in held if r["tool"] == "get_weather"]
            assert admin.post(f"/v1/admin/tool-reviews/{review['id']}/approve").status_code == 200
            assert [t["name"] for t in user.get("/v1/tools").json()["data"]] == ["get_weather"]

            assert admin.delete("/v1/admin/servers/w").status_code == 200
            trusted = {**weather, "name": "vetted", "trusted": True}
            assert admin.post("/v1/admin/servers", json=trusted).status_code == 201
            offered = {t["name"] for t in user.get("/v1/tools").json()["data"]}
            assert offered == {"get_weather", "city_time", "status", "broken"}
