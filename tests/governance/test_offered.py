"""The kept offers: worked out once per server, rebuilt for the server that changed only, and
replaced at once when a policy, pin, server or tool list changes."""

from __future__ import annotations

from collections.abc import Sequence

from governance.offered import OfferedTools
from llm_service.types import ToolCall, ToolSpec
from mcp_client import CatalogSettings, MCPToolCatalog, StandardizedTool
from mcp_client.supervisor import ServerPolicy
from mcp_client.types import CatalogPart, definition_hash
from tests.governance.conftest import DESK_POLICY, Desk, GovernedFactory, governing
from tests.support.mcp_servers import demo_server, in_process


def tool(server: str, name: str, description: str = "") -> StandardizedTool:
    schema = {"type": "object", "properties": {}}
    return StandardizedTool(
        name=f"{server}__{name}",
        description=description,
        parameters=schema,
        server=server,
        original_name=name,
        definition_hash=definition_hash(name, description, schema),
        roles=frozenset({"user"}),
    )


class Worked:
    """The ``effective`` step, recording which servers' tools it was asked to work out."""

    def __init__(self) -> None:
        self.servers: list[str] = []

    def __call__(self, tools: Sequence[StandardizedTool]) -> tuple[StandardizedTool, ...]:
        self.servers.extend(sorted({t.server for t in tools}))
        return tuple(tools)


def test_an_offer_is_kept_until_a_part_or_the_state_changes() -> None:
    worked = Worked()
    offered = OfferedTools(worked, [])
    parts = {
        "a": CatalogPart(1, (tool("a", "one"),)),
        "b": CatalogPart(2, (tool("b", "two"),)),
    }
    user = frozenset({"user"})
    first = offered.offer(user, None, parts, state=0)
    assert [t.name for t in first.tools] == ["a__one", "b__two"]
    assert offered.offer(user, None, dict(parts), state=0) is first
    assert worked.servers == ["a", "b"]
    # Another role set filters the tools already worked out.
    assert offered.offer(frozenset({"guest"}), None, parts, state=0).tools == ()
    assert worked.servers == ["a", "b"]

    # One server's tools changed: only its part is worked out again.
    parts["b"] = CatalogPart(3, (tool("b", "two", "changed"), tool("b", "three")))
    second = offered.offer(user, None, parts, state=0)
    assert second is not first
    assert [t.name for t in second.tools] == ["a__one", "b__two", "b__three"]
    assert second.tools[0] is first.tools[0]
    assert worked.servers == ["a", "b", "b"]

    # A policy, pin or trust change (the state) touches every server's tools.
    offered.offer(user, None, parts, state=1)
    assert worked.servers == ["a", "b", "b", "a", "b"]

    # A server that left takes its tools along.
    del parts["a"]
    assert [t.name for t in offered.offer(user, None, parts, state=1).tools] == [
        "b__two",
        "b__three",
    ]


def test_what_is_derived_from_an_offer_is_built_once_per_offer() -> None:
    offered = OfferedTools(Worked(), [])
    parts = {"a": CatalogPart(1, (tool("a", "one"),))}
    offer = offered.offer(frozenset({"user"}), None, parts, state=0)
    built: list[int] = []

    def names(tools: Sequence[StandardizedTool]) -> list[str]:
        built.append(1)
        return [t.name for t in tools]

    assert offer.derived("names", names) == ["a__one"]
    assert offer.derived("names", names) == ["a__one"]
    assert built == [1]


async def test_a_servers_changed_tool_list_is_offered_at_once_and_leaves_the_others(
    sqlite_url: str,
) -> None:
    docs = demo_server("docs")
    catalog = MCPToolCatalog(CatalogSettings())
    catalog.add_server(
        "docs", "in-process", ServerPolicy(roles=frozenset({"user"})), in_process(docs.server)
    )
    catalog.register_local_tools("desk", Desk().tools(), roles=[], policy=DESK_POLICY)
    async with governing(sqlite_url, catalog) as (tools, _, _):
        before = tools.offer(["user"])
        assert "late" not in {t.name for t in before.tools}
        desk_generation = catalog.parts()["desk"].generation

        grow = tools.may_run(ToolCall("c1", "grow", {}), ["user"]).ticket
        assert grow is not None
        assert (await tools.run(grow)).content == "grown"
        assert await catalog.wait_for(lambda: catalog.get("late") is not None, timeout=10)

        after = tools.offer(["user"])
        assert "late" in {t.name for t in after.tools}
        late = catalog.get("late")
        assert late is not None
        late_spec = ToolSpec(late.name, late.description, late.parameters)
        assert late_spec in tools.offer(["user"]).specs
        assert catalog.parts()["desk"].generation == desk_generation
        desk_before = [t for t in before.tools if t.server == "desk"]
        assert [t for t in after.tools if t.server == "desk"] == desk_before
        # What a turn offers and what /v1/tools lists are the same kept offer.
        assert [s.name for s in tools.offer(["user"]).specs] == [t.name for t in after.tools]


async def test_a_pin_decision_is_offered_at_once(governed: GovernedFactory) -> None:
    async with governed(enabled=True) as gov:
        assert gov.tools.offer(["user"]).specs == ()
        [pin] = [pin for pin in await gov.tools.reviews() if pin.tool_name == "get_time"]
        await gov.tools.decide_review(pin.id, True, actor_key_id=3)
        assert [spec.name for spec in gov.tools.offer(["user"]).specs] == ["get_time"]
        assert [tool.name for tool in gov.tools.offer(["user"]).tools] == ["get_time"]
