"""A tool's name, and the admins' policies and bundles that name it, never change because another
server appeared: the first claimant keeps the bare name, a newcomer gets ``server__tool``."""

from __future__ import annotations

from typing import Any

import httpx
import yaml

from tests.support.gateway import RunningGateway, running_gateway
from tests.support.processes import REPO

SHIPPED = yaml.safe_load((REPO / "config" / "gateway.yaml").read_text())
DEMO_MODEL = next(m for m in SHIPPED["models"] if m["name"] == "mock-tools")
TIME_SERVER = next(s for s in SHIPPED["mcp_servers"] if s["name"] == "time")
# The same program again, added at run time by an admin.
CLOCK = {
    "name": "clock",
    "transport": "stdio",
    "command": TIME_SERVER["command"],
    "args": TIME_SERVER["args"],
    "roles": ["user", "admin"],
    "trusted": True,
}
BUNDLES = [
    {"name": "bare", "tools": ["get_current_time"]},
    {"name": "clocks", "tools": ["clock__*"]},
    {"name": "qualified", "tools": ["time__get_current_time"]},
]


def gateway_on(database_url: str) -> Any:
    return running_gateway(
        database_url,
        models=[DEMO_MODEL],
        mcp_servers=[TIME_SERVER],
        tool_catalog={
            "stdio_allow_list": [[TIME_SERVER["command"], *TIME_SERVER["args"]]],
            "discovery_timeout": 10,
            "bundles": BUNDLES,
        },
    )


def client(gateway: RunningGateway, key: str) -> httpx.Client:
    return httpx.Client(
        base_url=gateway.url, headers={"authorization": f"Bearer {key}"}, timeout=60
    )


def admin_tools(gateway: RunningGateway, key: str) -> dict[str, dict[str, Any]]:
    with client(gateway, key) as admin:
        return {tool["name"]: tool for tool in admin.get("/v1/admin/tools").json()["data"]}


def offered(gateway: RunningGateway, key: str, bundle: str) -> set[tuple[str, str]]:
    with client(gateway, key) as user:
        listed = user.get("/v1/tools", params={"bundle": bundle}).json()["data"]
    return {(tool["name"], tool["server"]) for tool in listed}


def first_call_state(gateway: RunningGateway, key: str) -> str:
    with client(gateway, key) as user:
        conversation = user.post("/v1/conversations", json={"model": "mock-tools"}).json()
        turn = user.post(f"/v1/conversations/{conversation['id']}/messages", json={"content": "?"})
    assert turn.status_code == 200, turn.text
    first = turn.json()["tool_calls"][0]
    assert first["tool"] == "get_current_time"
    return str(first["state"])


def test_a_server_offering_the_same_tool_renames_nothing_and_policies_keep_applying(
    database_url: str,
) -> None:
    with gateway_on(database_url) as gateway:
        admin_key = gateway.create_key("ops", ["admin"])
        user_key = gateway.create_key("someone", ["user"])
        with client(gateway, admin_key) as admin:
            disabled = admin.put("/v1/admin/tools/get_current_time/policy", json={"enabled": False})
            assert disabled.status_code == 200, disabled.text
            added = admin.post("/v1/admin/servers", json=CLOCK)
            assert added.status_code == 201, added.text

        tools = admin_tools(gateway, admin_key)
        original = tools["get_current_time"]
        assert original["server"] == "time"
        assert original["policy"]["enabled"] is False
        newcomer = tools["clock__get_current_time"]
        assert (newcomer["server"], newcomer["original_name"]) == ("clock", "get_current_time")
        assert newcomer["policy"]["enabled"] is True
        assert "time__get_current_time" not in tools
        # The model's call of the disabled tool is still refused.
        assert first_call_state(gateway, user_key) == "denied_by_policy"

        # Bundles select by the same identity: the bare name stays the first server's tool.
        assert offered(gateway, user_key, "bare") == set()  # it is disabled
        assert offered(gateway, user_key, "qualified") == set()
        assert ("clock__get_current_time", "clock") in offered(gateway, user_key, "clocks")

        # The newcomer's policy is its own.
        with client(gateway, admin_key) as admin:
            narrowed = admin.put(
                "/v1/admin/tools/clock__get_current_time/policy", json={"roles": ["admin"]}
            )
            assert narrowed.status_code == 200, narrowed.text
            assert admin.put(
                "/v1/admin/tools/get_current_time/policy", json={"enabled": None}
            ).json()["policy"]["roles"] == ["admin", "user"]
        assert offered(gateway, user_key, "bare") == {("get_current_time", "time")}
        assert offered(gateway, user_key, "qualified") == {("get_current_time", "time")}
        assert offered(gateway, user_key, "clocks") == {("clock__convert_time", "clock")}

    # Restarted, and with the newcomer edited: the same names, the same policies.
    with gateway_on(database_url) as gateway:
        with client(gateway, admin_key) as admin:
            edited = admin.put("/v1/admin/servers/clock", json={**CLOCK, "roles": ["admin"]})
            assert edited.status_code == 200, edited.text
        tools = admin_tools(gateway, admin_key)
        assert tools["get_current_time"]["server"] == "time"
        assert tools["clock__get_current_time"]["policy"]["roles"] == ["admin"]
        assert first_call_state(gateway, user_key) != "denied_by_policy"
