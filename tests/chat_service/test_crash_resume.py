"""A replica killed mid-call: another replica on the same PostgreSQL database marks the call's
outcome unknown and resumes the turn, so the conversation is not blocked until the turn times
out."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import yaml

from migrations.commands import upgrade
from tests.support.databases import postgres_database
from tests.support.gateway import create_key
from tests.support.mcp_servers import demo_server
from tests.support.processes import gateway_process, kill_hard
from tests.support.servers import serve
from tests.support.waiting import eventually

HANGING_MODEL = {
    "name": "hanging",
    "provider": "mock",
    "script": [
        {"tool_calls": [{"name": "hang", "arguments": {}}]},
        {"text": "after the crash: {last_tool_result}"},
    ],
}


def _config(tmp_path: Path, database_url: str, docs_url: str) -> Path:
    path = tmp_path / "gateway.yaml"
    server = {
        "name": "docs",
        "transport": "streamable_http",
        "url": f"{docs_url}/mcp",
        "roles": ["user"],
        "trusted": True,
    }
    tool_loop = {
        "tool_timeout_seconds": 2,
        "sweep_interval_seconds": 0.2,
        "follow_poll_seconds": 0.05,
    }
    settings = {
        "database_url": database_url,
        "models": [HANGING_MODEL],
        "mcp_servers": [server],
        "tool_loop": tool_loop,
    }
    path.write_text(yaml.safe_dump(settings))
    return path


def _headers(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


def _start_and_wait_until_executing(url: str, key: str) -> str:
    """Starts a streamed turn; returns once the call is executing (the stream stays open)."""
    created = httpx.post(
        f"{url}/v1/conversations", json={"model": "hanging"}, headers=_headers(key), timeout=30
    )
    conversation_id = str(created.json()["id"])
    with httpx.stream(
        "POST",
        f"{url}/v1/conversations/{conversation_id}/messages",
        json={"content": "go", "stream": True},
        headers=_headers(key),
        timeout=30,
    ) as response:
        for line in response.iter_lines():
            if line == "event: tool_call.started":
                return conversation_id
    raise AssertionError("the call never started")


def _conversation(url: str, key: str, conversation_id: str) -> Any:
    response = httpx.get(
        f"{url}/v1/conversations/{conversation_id}", headers=_headers(key), timeout=30
    )
    assert response.status_code == 200, response.text
    return response.json()


def test_a_turn_whose_replica_died_mid_call_is_resumed_by_another(tmp_path: Path) -> None:
    demo = demo_server("docs")
    with ExitStack() as stack:
        docs_url = stack.enter_context(serve(demo.server.streamable_http_app()))
        database_url = stack.enter_context(postgres_database())
        upgrade(database_url)
        user = create_key(database_url, "someone", ["user"])
        config = _config(tmp_path, database_url, docs_url)
        doomed = stack.enter_context(gateway_process(config))
        survivor = stack.enter_context(gateway_process(config))

        conversation_id = _start_and_wait_until_executing(doomed.url, user)
        assert demo.hang_started.wait(30), "the tool server never saw the call"
        kill_hard(doomed)

        def settled() -> bool:
            return _conversation(survivor.url, user, conversation_id)["status"] == "idle"

        # Abandoned only past the tool timeout plus a grace, not the 600 s turn timeout.
        eventually(settled, "the survivor resumed and finished the turn", timeout=40)
        final = _conversation(survivor.url, user, conversation_id)
        [call] = final["tool_calls"]
        assert call["state"] == "unknown_outcome"
        answer = final["messages"][-1]
        assert answer["role"] == "assistant"
        assert "outcome is unknown" in json.dumps(answer["content"])
        again = httpx.post(
            f"{survivor.url}/v1/conversations/{conversation_id}/messages",
            json={"content": "and now?"},
            headers=_headers(user),
            timeout=30,
        )
        assert again.status_code != 409, again.text
