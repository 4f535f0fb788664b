"""A call that needs a human: held in the admin queue while the MCP request waits."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import mcp_types as types
import pytest

from tests.gateway.mcp_server.conftest import (
    Desk,
    McpStack,
    call,
    gateway_settings,
    mcp_session,
    record_of,
    stack_on,
    text_of,
)


async def call_while(
    stack: McpStack, arguments: dict[str, Any], decide: str, reason: str | None = None
) -> tuple[types.CallToolResult, list[str]]:
    """Calls `transfer` and, once the gateway reports the call waiting, takes the decision in
    the admin API while the call still waits; the result and the progress messages seen."""
    waiting = anyio.Event()
    messages: list[str] = []
    outcome: list[types.CallToolResult] = []

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        messages.append(message or "")
        waiting.set()

    async with mcp_session(stack.mcp_url, stack.user_key) as session:

        async def transfer() -> None:
            result = await session.call_tool("transfer", arguments, progress_callback=progress)
            outcome.append(result)

        async with anyio.create_task_group() as group:
            group.start_soon(transfer)
            await waiting.wait()
            assert stack.desk.transfers == []
            async with stack.admin() as admin:
                [held] = (await admin.get("/v1/admin/approvals")).json()["data"]
                assert held["tool"] == "transfer"
                assert held["arguments"] == arguments
                assert held["record_id"] in messages[0]
                body = {"reason": reason} if reason else {}
                url = f"/v1/admin/approvals/{held['record_id']}/{decide}"
                decided = await admin.post(url, json=body)
                assert decided.status_code == 200, decided.text
    [result] = outcome
    return result, messages


def test_a_call_waits_for_approval_in_the_admin_api_then_runs_once(mcp_stack: McpStack) -> None:
    result, messages = anyio.run(call_while, mcp_stack, {"amount": 5}, "approve")

    assert not result.is_error
    assert text_of(result) == "transferred 5"
    assert record_of(result)["state"] == "succeeded"
    assert mcp_stack.desk.transfers == [5]
    assert messages
    assert all("Waiting for a reviewer" in message for message in messages)


def test_a_rejected_call_is_a_tool_error_and_never_runs(mcp_stack: McpStack) -> None:
    result, _ = anyio.run(call_while, mcp_stack, {"amount": 7}, "reject", "not this month")

    assert result.is_error
    assert text_of(result) == "Rejected by reviewer: not this month"
    assert record_of(result)["state"] == "rejected"
    assert mcp_stack.desk.transfers == []


@pytest.fixture
def impatient(database_url: str, desk: tuple[Desk, str]) -> Iterator[McpStack]:
    """A gateway that waits only a moment for approvals."""
    wait = {**gateway_settings(desk[1])["mcp_server"], "approval_wait_seconds": 0.3}
    with stack_on(database_url, desk, mcp_server=wait) as stack:
        yield stack


def test_after_the_wait_the_error_names_the_pending_approval_and_asking_again_resumes_it(
    impatient: McpStack,
) -> None:
    first = call(impatient, impatient.user_key, "transfer", {"amount": 9})

    assert first.is_error
    record_id = record_of(first)["record_id"]
    assert record_of(first)["state"] == "awaiting_approval"
    assert record_id in text_of(first)
    assert impatient.desk.transfers == []

    async def approve() -> None:
        async with impatient.admin() as admin:
            [held] = (await admin.get("/v1/admin/approvals")).json()["data"]
            assert held["record_id"] == record_id
            assert (await admin.post(f"/v1/admin/approvals/{record_id}/approve")).status_code == 200

    anyio.run(approve)
    again = call(impatient, impatient.user_key, "transfer", {"amount": 9})

    assert not again.is_error
    assert record_of(again) == {"record_id": record_id, "state": "succeeded"}
    assert impatient.desk.transfers == [9]
