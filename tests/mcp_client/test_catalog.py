"""The catalog over real SDK servers run in process: naming, roles, bundles and every call path."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mcp_client import (
    BundleConfig,
    CatalogSettings,
    LocalTool,
    MCPToolCatalog,
    ServerPolicy,
    ToolOverride,
)
from tests.support.mcp_servers import HUGE_SIZE, DemoServer, demo_server, in_process


@pytest.fixture
def alpha() -> DemoServer:
    return demo_server("alpha")


@pytest.fixture
def beta() -> DemoServer:
    return demo_server("beta")


async def _double(arguments: dict[str, Any]) -> dict[str, Any]:
    return {"doubled": arguments["n"] * 2}


async def _explode(arguments: dict[str, Any]) -> str:
    raise RuntimeError("handler bug")


LOCAL_TOOLS = [
    LocalTool(
        "double",
        "Double a number.",
        {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        _double,
        category="math",
    ),
    LocalTool("explode", "Always raises.", {"type": "object", "properties": {}}, _explode),
]

BUNDLES = [
    BundleConfig(name="math", categories=["math"], roles=["intern"]),
    BundleConfig(name="echoes", tools=["alpha__echo", "beta__echo"]),
    BundleConfig(name="beta-only", tools=["beta__*"]),
]


@pytest.fixture
async def catalog(alpha: DemoServer, beta: DemoServer) -> AsyncIterator[MCPToolCatalog]:
    settings = CatalogSettings(max_result_chars=1000, call_timeout=10, bundles=BUNDLES)
    catalog = MCPToolCatalog(settings)
    alpha_policy = ServerPolicy(
        roles=frozenset({"user"}),
        tools={
            "fail": ToolOverride(roles=["admin"]),
            "grow": ToolOverride(requires_approval=True, auto_approved=True),
            "mixed": ToolOverride(enabled=False),
        },
    )
    catalog.add_server("alpha", "in-process", alpha_policy, in_process(alpha.server))
    catalog.add_server(
        "beta", "in-process", ServerPolicy(roles=frozenset({"admin"})), in_process(beta.server)
    )
    catalog.register_local_tools("local", LOCAL_TOOLS, roles=["user", "intern"])
    await catalog.start()
    try:
        yield catalog
    finally:
        await catalog.aclose()


def _names(tools: list[Any]) -> set[str]:
    return {tool.name for tool in tools}


async def test_the_first_server_keeps_a_shared_name_and_a_later_one_is_namespaced(
    catalog: MCPToolCatalog,
) -> None:
    names = _names(catalog.offered_to(["user", "admin"]))
    assert {"echo", "beta__echo", "hang", "beta__hang", "double"} <= names
    assert "alpha__echo" not in names
    assert "beta__mixed" not in names  # alpha's is disabled by override: beta's takes the name
    assert "mixed" in names
    tool = catalog.get("echo")
    assert tool is not None
    assert (tool.server, tool.original_name) == ("alpha", "echo")
    assert tool.parameters["properties"]["text"]["type"] == "string"
    assert all(status.state == "ready" for status in catalog.status().values())


async def test_precedence_not_arrival_decides_which_server_keeps_a_shared_name(
    alpha: DemoServer, beta: DemoServer
) -> None:
    users = ServerPolicy(roles=frozenset({"user"}))
    catalog = MCPToolCatalog()
    catalog.add_server("newer", "x", users, in_process(alpha.server), precedence=(1, 2.0, "newer"))
    await catalog.start()
    try:
        assert catalog.get("echo") is not None
        # Rank, not arrival, decides, so every replica names the tools alike: a higher-ranked
        # server that comes up later (e.g. down since start) takes the bare name.
        catalog.add_server("older", "x", users, in_process(beta.server), (1, 1.0, "older"))
        await catalog.start()
        echo, newer = catalog.get("echo"), catalog.get("newer__echo")
        assert echo is not None
        assert echo.server == "older"
        assert newer is not None
        assert (newer.server, newer.original_name) == ("newer", "echo")
        assert (await catalog.call_tool("echo", {"text": "hi"})).content == "beta:hi"
    finally:
        await catalog.aclose()


async def test_always_namespace_prefixes_every_tool(alpha: DemoServer) -> None:
    catalog = MCPToolCatalog(CatalogSettings(always_namespace=True))
    catalog.add_server(
        "alpha", "x", ServerPolicy(roles=frozenset({"user"})), in_process(alpha.server)
    )
    await catalog.start()
    try:
        assert "alpha__huge" in _names(catalog.offered_to(["user"]))
    finally:
        await catalog.aclose()


async def test_roles_filter_tools_and_overrides_apply(catalog: MCPToolCatalog) -> None:
    user = _names(catalog.offered_to(["user"]))
    assert "echo" in user
    assert "beta__echo" not in user  # beta is admin-only
    assert "fail" not in user  # the override narrows it to admin
    assert "fail" in _names(catalog.offered_to(["admin"]))
    assert catalog.offered_to(["nobody"]) == []
    grow = catalog.get("grow")
    assert grow is not None
    assert (grow.requires_approval, grow.auto_approved) == (True, True)
    echo = catalog.get("echo")
    assert echo is not None
    assert (echo.requires_approval, echo.auto_approved) == (False, False)


async def test_bundles_granted_to_roles_and_selected_per_request(catalog: MCPToolCatalog) -> None:
    # `intern` is granted only the math bundle, although the local server allows it everything.
    assert _names(catalog.offered_to(["intern"])) == {"double"}
    both = catalog.offered_to(["user", "admin"], bundle="echoes")
    assert _names(both) == {"echo", "beta__echo"}
    assert _names(catalog.offered_to(["user"], bundle="echoes")) == {"echo"}
    beta_only = _names(catalog.offered_to(["admin"], bundle="beta-only"))
    assert "beta__echo" in beta_only
    assert "fail" not in beta_only
    assert catalog.offered_to(["user"], bundle="no-such-bundle") == []


async def test_calls_reach_the_right_server(catalog: MCPToolCatalog) -> None:
    result = await catalog.call_tool("beta__echo", {"text": "hi"})
    assert (result.content, result.is_error) == ("beta:hi", False)
    doubled = await catalog.call_tool("double", {"n": 21})
    assert doubled.structured == {"doubled": 42}


async def test_invalid_arguments_are_refused_before_sending(catalog: MCPToolCatalog) -> None:
    missing = await catalog.call_tool("echo", {})
    assert missing.is_error
    assert "'text' is a required property" in missing.content
    wrong_type = await catalog.call_tool("echo", {"text": 5})
    assert wrong_type.is_error
    assert "text: 5 is not of type 'string'" in wrong_type.content
    unknown = await catalog.call_tool("echo", {"text": "a", "loud": True})
    assert unknown.is_error
    assert "unknown argument `loud`" in unknown.content
    nothing = await catalog.call_tool("no_such_tool", {})
    assert nothing.is_error


async def test_a_hanging_tool_times_out_and_the_server_sees_the_cancellation(
    catalog: MCPToolCatalog, alpha: DemoServer
) -> None:
    result = await catalog.call_tool("hang", {}, timeout=0.3)
    assert result.is_error
    assert "cancelled" in result.content
    assert await asyncio.to_thread(alpha.hang_cancelled.wait, 10)
    # The server is still usable afterwards.
    assert (await catalog.call_tool("echo", {"text": "ok"})).content == "alpha:ok"


async def test_a_huge_result_is_truncated_with_a_marker(catalog: MCPToolCatalog) -> None:
    result = await catalog.call_tool("huge", {})
    assert result.truncated
    assert not result.is_error
    assert result.content.startswith("x" * 1000)
    assert result.content.endswith(f"[truncated: showing 1000 of {HUGE_SIZE} characters]")


async def test_is_error_and_handler_failures_become_error_results(catalog: MCPToolCatalog) -> None:
    failed = await catalog.call_tool("fail", {})
    assert failed.is_error
    assert "the backend is on fire" in failed.content
    exploded = await catalog.call_tool("explode", {})
    assert exploded.is_error
    assert "handler bug" in exploded.content


async def test_mixed_content_becomes_readable_text(catalog: MCPToolCatalog) -> None:
    result = await catalog.call_tool("mixed", {})
    assert result.content.splitlines() == [
        "a chart follows",
        "[image: image/png, 8 bytes]",
        "[resource <file:///notes.txt>]",
        "the notes",
    ]
    # The image itself comes along whole, for the providers that take images in tool results.
    [image] = result.images
    assert (image.mime_type, base64.b64decode(image.data)) == ("image/png", b"\x89PNG1234")


async def test_a_changed_tool_list_reaches_the_catalog(catalog: MCPToolCatalog) -> None:
    assert catalog.get("late") is None
    grown = await catalog.call_tool("grow", {})
    assert grown.content == "grown"
    assert await catalog.wait_for(lambda: catalog.get("late") is not None, timeout=10)
    assert (await catalog.call_tool("late", {})).content == "late answer"


async def test_a_changed_tool_list_moves_that_servers_part_only(catalog: MCPToolCatalog) -> None:
    before = catalog.parts()
    assert list(before) == ["alpha", "beta", "local"]
    assert (await catalog.call_tool("grow", {})).content == "grown"
    assert await catalog.wait_for(lambda: catalog.get("late") is not None, timeout=10)
    after = catalog.parts()
    assert after["alpha"].generation != before["alpha"].generation
    assert "late" in {tool.name for tool in after["alpha"].tools}
    # Every tool object was built anew, but the others' tools are the same: their parts stay.
    assert after["beta"] is before["beta"]
    assert after["local"] is before["local"]


async def test_local_tools_added_after_start_are_brought_up_by_start(
    catalog: MCPToolCatalog,
) -> None:
    async def greet(arguments: dict[str, Any]) -> str:
        return f"hello {arguments['who']}"

    schema = {"type": "object", "properties": {"who": {"type": "string"}}, "required": ["who"]}
    catalog.register_local_tools("extra", [LocalTool("greet", "Greet.", schema, greet)], ["user"])
    await catalog.start()
    assert "greet" in _names(catalog.offered_to(["user"]))
    assert (await catalog.call_tool("greet", {"who": "ana"})).content == "hello ana"


async def test_a_periodic_refresh_finds_tools_added_without_a_notification() -> None:
    quiet = demo_server("quiet")
    catalog = MCPToolCatalog(CatalogSettings(refresh_interval=0.05))
    policy = ServerPolicy(roles=frozenset({"user"}))
    catalog.add_server("quiet", "in-process", policy, in_process(quiet.server))
    await catalog.start()
    try:
        quiet.server.add_tool(lambda: "found", name="silent", description="No notification.")
        assert await catalog.wait_for(lambda: catalog.get("silent") is not None, timeout=10)
    finally:
        await catalog.aclose()


async def test_a_busy_server_refuses_calls_beyond_its_concurrency_limit() -> None:
    slow = demo_server("slow")
    catalog = MCPToolCatalog()
    policy = ServerPolicy(roles=frozenset({"user"}), max_concurrency=1)
    catalog.add_server("slow", "in-process", policy, in_process(slow.server))
    await catalog.start()
    try:
        hanging = asyncio.create_task(catalog.call_tool("hang", {}, timeout=30))
        assert await asyncio.to_thread(slow.hang_started.wait, 10)
        busy = await catalog.call_tool("echo", {"text": "me too"}, timeout=0.2)
        assert busy.is_error
        assert "busy" in busy.content
        hanging.cancel()
        await asyncio.gather(hanging, return_exceptions=True)
        assert (await catalog.call_tool("echo", {"text": "now"})).content == "slow:now"
    finally:
        await catalog.aclose()


async def test_a_changed_schema_is_checked_anew_not_from_the_compiled_old_one() -> None:
    changing = demo_server("changing")
    catalog = MCPToolCatalog(CatalogSettings(refresh_interval=0.05))
    policy = ServerPolicy(roles=frozenset({"user"}))
    catalog.add_server("changing", "in-process", policy, in_process(changing.server))
    await catalog.start()
    try:
        assert (await catalog.call_tool("echo", {"text": "a"})).content == "changing:a"

        def echo(words: int) -> str:
            return f"{words} words"

        def takes_words() -> bool:
            tool = catalog.get("echo")
            return tool is not None and "words" in tool.parameters.get("properties", {})

        changing.server.remove_tool("echo")
        changing.server.add_tool(echo, name="echo", description="Echo, changed.")
        assert await catalog.wait_for(takes_words, timeout=10)
        refused = await catalog.call_tool("echo", {"text": "a"})
        assert refused.is_error
        assert "unknown argument `text`" in refused.content
        assert (await catalog.call_tool("echo", {"words": 3})).content == "3 words"
    finally:
        await catalog.aclose()
