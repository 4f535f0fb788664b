"""The shipped demo: a scripted model, PyPI's mcp-server-time over stdio, a human approval.

Also run across process deaths and across two gateway processes sharing one database.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import yaml
from sqlalchemy import select

from db.engine import create_engine
from db.models import AuditEvent
from db.usage_models import UsageRecord
from migrations.commands import upgrade
from tests.support.databases import postgres_database
from tests.support.gateway import create_key, running_gateway
from tests.support.processes import REPO, gateway_process, kill_hard

SHIPPED = yaml.safe_load((REPO / "config" / "gateway.yaml").read_text())
DEMO_MODEL = next(m for m in SHIPPED["models"] if m["name"] == "mock-tools")
TIME_SERVER = next(s for s in SHIPPED["mcp_servers"] if s["name"] == "time")


def _call(url: str, key: str, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    response = httpx.request(
        method, f"{url}{path}", json=body, headers={"authorization": f"Bearer {key}"}, timeout=60
    )
    assert response.status_code < 300, response.text
    return response.json()


def _start_turn(url: str, key: str) -> tuple[str, dict[str, Any]]:
    conversation = _call(url, key, "POST", "/v1/conversations", {"model": "mock-tools"})
    turn = _call(
        url, key, "POST", f"/v1/conversations/{conversation['id']}/messages", {"content": "time?"}
    )
    return conversation["id"], turn


def _follow(url: str, key: str, conversation_id: str) -> list[str]:
    kinds = []
    with httpx.stream(
        "GET",
        f"{url}/v1/conversations/{conversation_id}/events",
        headers={"authorization": f"Bearer {key}"},
        timeout=60,
    ) as response:
        for line in response.iter_lines():
            if line.startswith("data: ") and '"status"' in line:
                kinds.append(json.loads(line.removeprefix("data: ")).get("status", ""))
    return kinds


def _assert_demo_completed(url: str, key: str, conversation_id: str) -> None:
    final = _call(url, key, "GET", f"/v1/conversations/{conversation_id}")
    states = {c["tool"]: c["state"] for c in final["tool_calls"]}
    assert states == {"get_current_time": "succeeded", "convert_time": "succeeded"}
    answer = final["messages"][-1]["content"]
    assert answer.startswith("12:00 in UTC is this in Oslo:")
    assert "Europe/Oslo" in answer


def _assert_paused(turn: dict[str, Any]) -> str:
    assert turn["status"] == "awaiting_approval", turn
    states = {c["tool"]: c["state"] for c in turn["tool_calls"]}
    assert states == {"get_current_time": "succeeded", "convert_time": "awaiting_approval"}
    return next(c["record_id"] for c in turn["tool_calls"] if c["tool"] == "convert_time")


def test_demo_flow_in_process(database_url: str) -> None:
    with running_gateway(database_url, models=[DEMO_MODEL], mcp_servers=[TIME_SERVER]) as gateway:
        user = gateway.create_key("newcomer", ["user"])
        admin = gateway.create_key("reviewer", ["admin"])
        conversation_id, turn = _start_turn(gateway.url, user)
        record_id = _assert_paused(turn)

        _call(gateway.url, admin, "POST", f"/v1/admin/approvals/{record_id}/approve")
        assert _follow(gateway.url, user, conversation_id)[-1] == "completed"

        _assert_demo_completed(gateway.url, user, conversation_id)


def _config(tmp_path: Path, database_url: str) -> Path:
    path = tmp_path / "gateway.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "database_url": database_url,
                "models": [DEMO_MODEL],
                "mcp_servers": [TIME_SERVER],
                "tool_loop": {"sweep_interval_seconds": 0.2, "follow_poll_seconds": 0.05},
            }
        )
    )
    return path


def test_a_pending_approval_survives_a_killed_process(tmp_path: Path, sqlite_url: str) -> None:
    upgrade(sqlite_url)
    user = create_key(sqlite_url, "newcomer", ["user"])
    admin = create_key(sqlite_url, "reviewer", ["admin"])
    config = _config(tmp_path, sqlite_url)

    with gateway_process(config) as first:
        conversation_id, turn = _start_turn(first.url, user)
        record_id = _assert_paused(turn)
        kill_hard(first)

    with gateway_process(config) as second:
        # Nothing ran at start without an approval.
        pending = _call(second.url, admin, "GET", "/v1/admin/approvals?status=pending")["data"]
        assert [c["record_id"] for c in pending] == [record_id]
        _call(second.url, admin, "POST", f"/v1/admin/approvals/{record_id}/approve")
        assert _follow(second.url, user, conversation_id)[-1] == "completed"
        _assert_demo_completed(second.url, user, conversation_id)
    assert _executions(sqlite_url, record_id) == 1


def _executions(database_url: str, record_id: str) -> int:
    """How many times the call entered `executing`, from its audit trail."""

    async def count() -> int:
        engine = create_engine(database_url)
        try:
            async with engine.connect() as connection:
                rows = await connection.execute(
                    select(AuditEvent.id).where(
                        AuditEvent.tool_call_id == record_id,
                        AuditEvent.action == "tool_call.executing",
                    )
                )
                return len(rows.all())
        finally:
            await engine.dispose()

    return asyncio.run(count())


def test_two_processes_share_keys_approvals_and_turns(tmp_path: Path) -> None:
    with ExitStack() as stack:
        database_url = stack.enter_context(postgres_database())
        upgrade(database_url)
        user = create_key(database_url, "newcomer", ["user"])
        admin = create_key(database_url, "reviewer", ["admin"])
        config = _config(tmp_path, database_url)
        one = stack.enter_context(gateway_process(config))
        two = stack.enter_context(gateway_process(config))

        conversation_id, turn = _start_turn(one.url, user)
        record_id = _assert_paused(turn)
        _call(two.url, admin, "POST", f"/v1/admin/approvals/{record_id}/approve")

        assert _follow(one.url, user, conversation_id)[-1] == "completed"
        _assert_demo_completed(two.url, user, conversation_id)
        assert _executions(database_url, record_id) == 1
        one.process.terminate()  # a clean stop flushes usage
        two.process.terminate()
        one.process.wait(30)
        two.process.wait(30)
        # Three model calls: two before the pause (process one), one after the approval (two).
        assert _model_calls(database_url, conversation_id) == 3


def _model_calls(database_url: str, conversation_id: str) -> int:
    async def count() -> int:
        engine = create_engine(database_url)
        try:
            async with engine.connect() as connection:
                rows = await connection.execute(
                    select(UsageRecord.id).where(UsageRecord.request_id == conversation_id)
                )
                return len(rows.all())
        finally:
            await engine.dispose()

    return asyncio.run(count())
