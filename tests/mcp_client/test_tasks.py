"""Tools that run as tasks (MCP 2025-11-25), against an SDK server that serves tasks."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from mcp_client import CatalogSettings, MCPToolCatalog, ServerPolicy
from mcp_client.hooks import CallHooks, ToolProgress
from tests.support.mcp_servers import in_process
from tests.support.mcp_task_server import TaskServer


async def _catalog(server: TaskServer) -> MCPToolCatalog:
    catalog = MCPToolCatalog(CatalogSettings(call_timeout=10))
    policy = ServerPolicy(roles=frozenset({"user"}))
    catalog.add_server("jobs", "in-process", policy, in_process(server.build()))
    await catalog.start()
    return catalog


@pytest.fixture
def jobs() -> TaskServer:
    return TaskServer()


@pytest.fixture
async def catalog(jobs: TaskServer) -> AsyncIterator[MCPToolCatalog]:
    catalog = await _catalog(jobs)
    try:
        yield catalog
    finally:
        await catalog.aclose()


async def test_a_tool_keeps_its_execution_field(catalog: MCPToolCatalog) -> None:
    slow_sum = catalog.get("slow_sum")
    assert slow_sum is not None
    assert slow_sum.execution == {"taskSupport": "required"}
    plain = catalog.get("plain")
    assert plain is not None
    assert plain.execution is None


async def test_a_task_required_tool_runs_as_a_task_with_progress(
    catalog: MCPToolCatalog, jobs: TaskServer
) -> None:
    seen: list[ToolProgress] = []

    async def on_progress(progress: ToolProgress) -> None:
        seen.append(progress)

    result = await catalog.call_tool(
        "slow_sum", {"a": 2, "b": 3}, hooks=CallHooks(on_progress=on_progress)
    )

    assert (result.content, result.is_error) == ("sum=5", False)
    assert jobs.executions == ["slow_sum"]
    statuses = [p.task_status for p in seen if p.task_status]
    assert (statuses[0], statuses[-1]) == ("working", "completed")
    assert [(p.progress, p.total) for p in seen if p.progress is not None] == [
        (1, 3),
        (2, 3),
        (3, 3),
    ]


async def test_a_task_past_its_timeout_is_cancelled_on_the_server(
    catalog: MCPToolCatalog, jobs: TaskServer
) -> None:
    result = await catalog.call_tool("forever", {}, timeout=0.5)
    assert result.is_error
    assert result.content == "the tool did not answer within 0.5 s and was cancelled"
    assert await asyncio.to_thread(jobs.forever_cancelled.wait, 10)
    assert [task.status for task in jobs.tasks.values()] == ["cancelled"]


async def test_a_caller_that_gives_up_cancels_the_task(
    catalog: MCPToolCatalog, jobs: TaskServer
) -> None:
    call = asyncio.create_task(catalog.call_tool("forever", {}, timeout=30))
    assert await asyncio.to_thread(jobs.forever_started.wait, 10)
    call.cancel()
    await asyncio.gather(call, return_exceptions=True)
    assert await asyncio.to_thread(jobs.forever_cancelled.wait, 10)


async def test_a_tool_that_supports_tasks_runs_as_one(catalog: MCPToolCatalog) -> None:
    assert (await catalog.call_tool("either_way", {})).content == "ran as a task"
    assert (await catalog.call_tool("plain", {})).content == "ran directly"


async def test_without_the_servers_task_capability_no_task_is_sent() -> None:
    jobs = TaskServer(advertise_tasks=False)
    catalog = await _catalog(jobs)
    try:
        assert (await catalog.call_tool("either_way", {})).content == "ran directly"
        refused = await catalog.call_tool("slow_sum", {"a": 1, "b": 1})
        assert refused.is_error
        assert "must run as a task" in refused.content
        assert jobs.executions == []
    finally:
        await catalog.aclose()
