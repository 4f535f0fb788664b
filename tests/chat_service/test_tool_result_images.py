"""A gateway-run tool's images reach the conversation whole, not only as a description."""

from __future__ import annotations

import base64
from pathlib import Path

import httpx

from tests.support.gateway import running_gateway
from tests.support.mcp_servers import demo_server
from tests.support.servers import serve

MODEL = {
    "name": "charts",
    "provider": "mock",
    "server_tools": True,
    "script": [{"tool_calls": [{"name": "mixed"}]}, {"text": "Seen: {last_tool_result}"}],
}


def test_an_mcp_image_is_kept_in_the_stored_tool_result(tmp_path: Path) -> None:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}"
    demo = demo_server("charts")
    server = {
        "name": "charts",
        "transport": "streamable_http",
        "roles": ["user"],
        "trusted": True,
        "tools": {"hang": {"enabled": False}},
    }
    with (
        serve(demo.server.streamable_http_app()) as url,
        running_gateway(
            database_url, models=[MODEL], mcp_servers=[{**server, "url": f"{url}/mcp"}]
        ) as gateway,
    ):
        key = gateway.create_key("user", ["user"])
        with httpx.Client(
            base_url=gateway.url, headers={"authorization": f"Bearer {key}"}, timeout=30
        ) as client:
            conversation = client.post("/v1/conversations", json={"model": "charts"}).json()
            path = f"/v1/conversations/{conversation['id']}"
            turn = client.post(f"{path}/messages", json={"content": "chart?"})
            assert turn.status_code == 200, turn.text
            messages = client.get(path).json()["messages"]

    [result] = [m for m in messages if m["role"] == "tool"]
    text, image = result["content"]
    assert text["type"] == "text"
    assert "[image: image/png, 8 bytes]" in text["text"]
    png = base64.b64encode(b"\x89PNG1234").decode()
    assert image == {**image, "type": "image", "url": f"data:image/png;base64,{png}"}
