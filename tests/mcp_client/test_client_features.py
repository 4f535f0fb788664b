"""What the client does beyond calling, against real SDK servers: how it names itself, what it
advertises, progress, requests for input, cancellation and timeouts."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from mcp_client import CatalogSettings, MCPToolCatalog, ServerPolicy
from mcp_client.hooks import CallHooks, InputAnswer, InputRequest, ToolProgress
from mcp_client.identity import client_info
from tests.support.mcp_servers import DemoServer, demo_server, features_server, in_process


@pytest.fixture
def demo() -> DemoServer:
    return demo_server("demo")


@pytest.fixture
async def catalog(demo: DemoServer) -> AsyncIterator[MCPToolCatalog]:
    catalog = MCPToolCatalog(CatalogSettings(call_timeout=10))
    policy = ServerPolicy(roles=frozenset({"user"}))
    catalog.add_server("features", "in-process", policy, in_process(features_server()))
    catalog.add_server("demo", "in-process", policy, in_process(demo.server))
    await catalog.start()
    try:
        yield catalog
    finally:
        await catalog.aclose()


async def test_the_client_names_itself_llm_gateway_with_its_version(
    catalog: MCPToolCatalog,
) -> None:
    result = await catalog.call_tool("whoami", {})
    assert result.content == f"llm-gateway {client_info().version}"
    assert client_info().version not in ("", "0.1.0+unknown")


async def test_progress_notifications_reach_the_calls_hook(catalog: MCPToolCatalog) -> None:
    seen: list[ToolProgress] = []

    async def on_progress(progress: ToolProgress) -> None:
        seen.append(progress)

    result = await catalog.call_tool("steps", {}, hooks=CallHooks(on_progress=on_progress))

    assert result.content == "done"
    assert [(p.progress, p.total, p.message) for p in seen] == [
        (1, 3, "step 1 of 3"),
        (2, 3, "step 2 of 3"),
        (3, 3, "step 3 of 3"),
    ]


async def test_a_request_for_input_is_declined_by_default(catalog: MCPToolCatalog) -> None:
    assert (await catalog.call_tool("ask_name", {})).content == "no name (decline)"


async def test_a_request_for_input_reaches_the_calls_hook(catalog: MCPToolCatalog) -> None:
    asked: list[InputRequest] = []

    async def on_input(request: InputRequest) -> InputAnswer:
        asked.append(request)
        return InputAnswer(action="accept", content={"name": "Ana"})

    result = await catalog.call_tool("ask_name", {}, hooks=CallHooks(on_input=on_input))

    assert result.content == "hello Ana"
    assert len(asked) == 1
    assert (asked[0].mode, asked[0].message) == ("form", "What is your name?")
    assert asked[0].requested_schema["properties"]["name"]["type"] == "string"


async def test_an_answer_that_breaks_the_requested_schema_is_sent_as_a_decline(
    catalog: MCPToolCatalog,
) -> None:
    async def on_input(request: InputRequest) -> InputAnswer:
        return InputAnswer(action="accept", content={"name": 42})

    result = await catalog.call_tool("ask_name", {}, hooks=CallHooks(on_input=on_input))
    assert result.content == "no name (decline)"


async def test_a_timeout_names_the_limit_and_the_server_sees_the_cancellation(
    catalog: MCPToolCatalog, demo: DemoServer
) -> None:
    result = await catalog.call_tool("hang", {}, timeout=0.3)
    assert result.is_error
    assert result.content == "the tool did not answer within 0.3 s and was cancelled"
    assert await asyncio.to_thread(demo.hang_cancelled.wait, 10)


async def test_a_caller_that_gives_up_cancels_the_call_on_the_server(
    catalog: MCPToolCatalog, demo: DemoServer
) -> None:
    call = asyncio.create_task(catalog.call_tool("hang", {}, timeout=30))
    assert await asyncio.to_thread(demo.hang_started.wait, 10)
    call.cancel()
    await asyncio.gather(call, return_exceptions=True)
    assert await asyncio.to_thread(demo.hang_cancelled.wait, 10)


async def test_capabilities_advertise_what_is_answered_and_sampling_is_refused(
    catalog: MCPToolCatalog,
) -> None:
    advertised = (await catalog.call_tool("client_capabilities", {})).structured
    assert advertised is not None
    assert "elicitation" in advertised  # answered: declined unless a caller listens
    assert "sampling" not in advertised
    assert "roots" not in advertised
    assert "tasks" not in advertised  # the client runs no tasks of its own for servers
    refused = await catalog.call_tool("sample", {})
    assert refused.content == "sampling refused: Sampling not supported"
