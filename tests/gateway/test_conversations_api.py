"""``POST /v1/conversations`` refuses what ``GET /v1/tools`` refuses."""

from __future__ import annotations

import httpx
import yaml

from tests.support.gateway import running_gateway
from tests.support.processes import REPO

SHIPPED = yaml.safe_load((REPO / "config" / "gateway.yaml").read_text())
DEMO_MODEL = next(m for m in SHIPPED["models"] if m["name"] == "mock-tools")
TIME_SERVER = next(s for s in SHIPPED["mcp_servers"] if s["name"] == "time")


def test_a_conversation_with_an_unknown_bundle_is_refused_naming_bundle(sqlite_url: str) -> None:
    with running_gateway(
        sqlite_url,
        models=[DEMO_MODEL],
        mcp_servers=[TIME_SERVER],
        tool_catalog={"bundles": [{"name": "clock", "tools": ["get_current_time"]}]},
    ) as gateway:
        key = gateway.create_key("someone", ["user"])
        with httpx.Client(
            base_url=gateway.url, headers={"authorization": f"Bearer {key}"}, timeout=60
        ) as user:
            refused = user.post("/v1/conversations", json={"model": "mock-tools", "bundle": "nope"})
            assert refused.status_code == 400, refused.text
            assert refused.json()["error"]["param"] == "bundle"
            assert user.get("/v1/tools", params={"bundle": "nope"}).status_code == 400

            made = user.post("/v1/conversations", json={"model": "mock-tools", "bundle": "clock"})
            assert made.status_code == 201, made.text
            tools = user.get("/v1/tools", params={"bundle": "clock"}).json()["data"]
            assert [tool["name"] for tool in tools] == ["get_current_time"]
