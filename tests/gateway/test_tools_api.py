"""``GET /v1/tools`` and tool servers in ``/readyz``, through a real gateway."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.support.gateway import RunningGateway, running_gateway
from tests.support.mcp_servers import demo_server, manifest_app
from tests.support.servers import serve


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    database_url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('db') / 'gateway.db'}"
    demo = demo_server("docs")
    with (
        serve(demo.server.streamable_http_app()) as docs_url,
        running_gateway(
            database_url,
            environ={"DOCS_TOKEN": "secret-token"},
            mcp_servers=[
                {
                    "name": "docs",
                    "transport": "streamable_http",
                    "url": f"{docs_url}/mcp",
                    "headers_env": {"Authorization": "DOCS_TOKEN"},
                    "roles": ["user", "admin"],
                    "trusted": True,  # listed without review: this module is about roles
                    "tools": {"fail": {"roles": ["admin"]}, "hang": {"enabled": False}},
                },
                {
                    "name": "gone",
                    "transport": "http_manifest",
                    "url": "http://127.0.0.1:9",
                    "roles": ["user"],
                },
            ],
            tool_catalog={
                "discovery_timeout": 5,
                "bundles": [{"name": "talk", "tools": ["echo"]}],
            },
        ) as gateway,
    ):
        yield gateway


def _get(gateway: RunningGateway, path: str, key: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.get(f"{gateway.url}{path}", headers=headers, timeout=30)


def test_tools_are_listed_for_the_keys_roles(gateway: RunningGateway) -> None:
    user = gateway.create_key("user", ["user"])
    admin = gateway.create_key("admin", ["admin"])
    user_tools = {t["name"]: t for t in _get(gateway, "/v1/tools", user).json()["data"]}
    assert set(user_tools) == {"echo", "huge", "mixed", "grow"}
    assert user_tools["echo"]["parameters"]["required"] == ["text"]
    assert user_tools["echo"]["server"] == "docs"
    assert len(user_tools["echo"]["definition_hash"]) == 64
    admin_names = {t["name"] for t in _get(gateway, "/v1/tools", admin).json()["data"]}
    assert "fail" in admin_names
    nobody = gateway.create_key("nobody", ["analyst"])
    assert _get(gateway, "/v1/tools", nobody).json()["data"] == []


def test_a_bundle_narrows_the_list_and_an_unknown_one_is_refused(gateway: RunningGateway) -> None:
    user = gateway.create_key("user", ["user"])
    talk = _get(gateway, "/v1/tools?bundle=talk", user).json()["data"]
    assert [t["name"] for t in talk] == ["echo"]
    unknown = _get(gateway, "/v1/tools?bundle=nope", user)
    assert unknown.status_code == 400
    assert unknown.json()["error"]["param"] == "bundle"


def test_listing_tools_needs_a_key(gateway: RunningGateway) -> None:
    assert _get(gateway, "/v1/tools").status_code == 401


def test_readyz_reports_each_tool_server_to_admins_only(gateway: RunningGateway) -> None:
    # A server's error is the operators' business: others hear the status alone.
    for key in (None, gateway.create_key("caller", ["user"]), "gw-not-a-key"):
        anonymous = _get(gateway, "/readyz", key)
        assert (anonymous.status_code, anonymous.json()) == (200, {"status": "degraded"})
    response = _get(gateway, "/readyz", gateway.create_key("operator", ["admin"]))
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "degraded"
    servers = body["tool_servers"]
    assert servers["docs"] == {
        "state": "ready",
        "reason": None,
        "tools": 6,
        "transport": "streamable_http",
    }
    assert servers["gone"]["state"] == "degraded"
    assert servers["gone"]["reason"].startswith("GET /tools failed")
    assert "secret-token" not in response.text


def test_a_policy_change_and_a_runtime_server_show_in_the_list_at_once(sqlite_url: str) -> None:
    # Each answer below comes right after a change, with the list asked for (and kept) before it.
    with (
        serve(manifest_app([])) as manifest_url,
        running_gateway(
            sqlite_url,
            tool_catalog={"http_allow_list": [manifest_url], "discovery_timeout": 5},
        ) as gateway,
    ):
        admin_key = gateway.create_key("ops", ["admin"])
        user_key = gateway.create_key("team", ["user"])
        admin = {"Authorization": f"Bearer {admin_key}"}

        def listed() -> set[str]:
            return {t["name"] for t in _get(gateway, "/v1/tools", user_key).json()["data"]}

        assert listed() == set()
        server = {"name": "w", "transport": "http_manifest", "url": manifest_url}
        added = httpx.post(
            f"{gateway.url}/v1/admin/servers",
            json={**server, "roles": ["user"], "trusted": True},
            headers=admin,
            timeout=30,
        )
        assert added.status_code == 201, added.text
        assert listed() == {"get_weather", "city_time", "status", "broken"}

        disabled = httpx.put(
            f"{gateway.url}/v1/admin/tools/get_weather/policy",
            json={"enabled": False},
            headers=admin,
            timeout=30,
        )
        assert disabled.status_code == 200, disabled.text
        assert listed() == {"city_time", "status", "broken"}

        removed = httpx.delete(f"{gateway.url}/v1/admin/servers/w", headers=admin, timeout=30)
        assert removed.status_code == 200, removed.text
        assert listed() == set()
