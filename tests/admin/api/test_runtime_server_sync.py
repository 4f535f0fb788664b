"""A server an admin adds, changes or removes through one replica reaches every other replica
(each re-reads the stored servers every ``tool_catalog.runtime_servers_refresh_seconds``),
without disturbing the servers that did not change."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support.gateway import RunningGateway, running_gateway
from tests.support.mcp_servers import demo_server, manifest_app
from tests.support.servers import serve
from tests.support.waiting import eventually

ECHOER = {
    "name": "echoer",
    "provider": "mock",
    "script": [
        {"tool_calls": [{"name": "echo", "arguments": {"text": "hi"}}]},
        {"text": "Said: {last_tool_result}"},
    ],
}


def replica(database_url: str, http_allow_list: list[str], refresh_seconds: float) -> Any:
    return running_gateway(
        database_url,
        models=[ECHOER],
        tool_catalog={
            "http_allow_list": http_allow_list,
            "runtime_servers_refresh_seconds": refresh_seconds,
            "discovery_timeout": 5,
        },
    )


def client(gateway: RunningGateway, key: str) -> httpx.Client:
    return httpx.Client(
        base_url=gateway.url, headers={"authorization": f"Bearer {key}"}, timeout=30
    )


def offered(user: httpx.Client) -> set[str]:
    return {tool["name"] for tool in user.get("/v1/tools").json()["data"]}


def echo_roles(admin: httpx.Client) -> list[str] | None:
    tools = {t["name"]: t for t in admin.get("/v1/admin/tools").json()["data"]}
    return tools["echo"]["policy"]["roles"] if "echo" in tools else None


def servers(admin: httpx.Client) -> dict[str, str]:
    return {s["name"]: s["state"] for s in admin.get("/v1/admin/servers").json()["data"]}


def test_runtime_server_changes_reach_the_other_replica(database_url: str) -> None:
    demo = demo_server("remote")
    weather_lists: list[dict[str, str]] = []  # one entry per GET /tools: per (re)start
    with (
        serve(demo.server.streamable_http_app()) as remote_url,
        serve(manifest_app(weather_lists)) as weather_url,
        # A refreshes slowly: what B sees, B read from the database itself.
        replica(database_url, [remote_url, weather_url], 3600) as a,
        replica(database_url, [remote_url, weather_url], 0.05) as b,
    ):
        admin_key = a.create_key("ops", ["admin"])
        user_key = a.create_key("team", ["user"])
        remote = {
            "name": "remote",
            "transport": "streamable_http",
            "url": f"{remote_url}/mcp",
            "roles": ["user"],
            "trusted": True,
        }
        weather = {
            "name": "weather",
            "transport": "http_manifest",
            "url": weather_url,
            "roles": ["user"],
            "trusted": True,
        }
        with (
            client(a, admin_key) as admin_a,
            client(b, admin_key) as admin_b,
            client(b, user_key) as user_b,
        ):
            assert admin_a.post("/v1/admin/servers", json=weather).status_code == 201
            assert admin_a.post("/v1/admin/servers", json=remote).status_code == 201
            eventually(lambda: {"echo", "get_weather"} <= offered(user_b), "B offers both")
            assert servers(admin_b) == {"remote": "ready", "weather": "ready"}

            # Usable on B: a model's call there runs on the server B started.
            conversation = user_b.post("/v1/conversations", json={"model": "echoer"}).json()
            turn = user_b.post(
                f"/v1/conversations/{conversation['id']}/messages", json={"content": "go"}
            ).json()
            assert turn["status"] == "completed", turn
            assert turn["messages"][-1]["content"] == "Said: remote:hi"
            assert len(weather_lists) == 2  # started once on each replica

            changed = admin_a.put("/v1/admin/servers/remote", json={**remote, "roles": ["ops"]})
            assert changed.status_code == 200, changed.text
            eventually(lambda: echo_roles(admin_b) == ["ops"], "B restarts it with the new roles")
            assert "echo" not in offered(user_b)
            assert servers(admin_b) == {"remote": "ready", "weather": "ready"}

            assert admin_a.delete("/v1/admin/servers/remote").status_code == 200
            eventually(lambda: "remote" not in servers(admin_b), "B stops the removed server")
            assert "echo" not in {t["name"] for t in admin_b.get("/v1/admin/tools").json()["data"]}

            # The unchanged server was never restarted, on either replica.
            assert servers(admin_b) == {"weather": "ready"}
            assert "get_weather" in offered(user_b)
            assert len(weather_lists) == 2
