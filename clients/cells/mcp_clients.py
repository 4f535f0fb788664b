"""MCP clients against the gateway's ``/mcp``: the mcp SDK's own client (``clients/scripts``).

A reviewer approves held ``transfer`` calls in the admin API while a cell's client waits."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from clients.cells.python_clients import SCRIPTS
from clients.matrix import Cell, Context, expect, json_lines

KEY = "mcp-sdk"


@contextmanager
def reviewer(context: Context) -> Iterator[None]:
    """Approves every held call until the block ends (as a person at the admin queue would)."""
    stop = threading.Event()

    def review() -> None:
        while not stop.wait(0.1):
            for held in context.stack.admin("/v1/admin/approvals")["data"]:
                context.stack.admin(f"/v1/admin/approvals/{held['record_id']}/approve", "POST")

    thread = threading.Thread(target=review, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _sdk(context: Context, case: str) -> dict[str, Any]:
    env = {"GATEWAY_URL": context.stack.url, "GATEWAY_KEY": context.stack.key(KEY)}
    output = context.run([str(context.installed.python), str(SCRIPTS / "mcp_sdk.py"), case], env)
    seen = json_lines(output)
    expect(bool(seen), output[-2000:])
    return seen[-1]


def listed(context: Context) -> None:
    tools = _sdk(context, "list")["tools"]
    expect({"lookup", "transfer", "count"} <= set(tools), str(tools))


def called(context: Context) -> None:
    expect(_sdk(context, "call")["text"] == "mcp: a thing", "wrong result")


def approved_task(context: Context) -> None:
    with reviewer(context):
        seen = _sdk(context, "task")
    expected = {"created": "working", "status": "completed", "text": "transferred 22"}
    expect(seen == expected, str(seen))


def approved_waiting(context: Context) -> None:
    with reviewer(context):
        seen = _sdk(context, "waiting")
    expect(seen["text"] == "transferred 21", str(seen))
    expect("Waiting for a reviewer" in " ".join(seen["progress"]), str(seen))


def cancelled(context: Context) -> None:
    seen = _sdk(context, "cancel")
    expected = {"cancelled": "cancelled", "later": "cancelled", "listed": "cancelled"}
    expect(seen == expected, str(seen))
    expect(23 not in context.stack.desk.transfers, "the cancelled transfer ran")


SDK = "mcp SDK client (Python)"
CELLS = [
    Cell(SDK, "tools/list", "/mcp", listed),
    Cell(SDK, "tools/call", "/mcp", called),
    Cell(SDK, "call needing approval, as a task (tasks/get, tasks/result)", "/mcp", approved_task),
    Cell(SDK, "call needing approval, waiting with progress", "/mcp", approved_waiting),
    Cell(SDK, "tasks/cancel, then tasks/list and tasks/get elsewhere", "/mcp", cancelled),
]
