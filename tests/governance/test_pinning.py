"""Tool pinning through the facade: a definition not reviewed is held from every principal."""

from __future__ import annotations

from governance import Denial, PinStatus
from llm_service.types import ToolCall
from tests.governance.conftest import GovernedFactory


async def test_new_definitions_are_held_until_an_admin_approves_them(
    governed: GovernedFactory,
) -> None:
    async with governed(enabled=True) as gov:
        get_time = gov.tools.tool("get_time")
        assert get_time is not None
        assert gov.tools.held_for_review(get_time)
        assert gov.tools.offer(["admin"]).tools == ()
        verdict = gov.tools.may_run(ToolCall("c1", "get_time", {}), ["user"])
        assert verdict.denial is Denial.HELD_FOR_REVIEW
        assert verdict.reason == "Tool `get_time` does not exist."  # as if unknown to the model
        assert verdict.ticket is None  # nothing it may run
        assert gov.desk.ran == []

        pending = {pin.tool_name: pin for pin in await gov.tools.reviews()}
        assert set(pending) == {"get_time", "transfer_money", "admin_only"}
        assert await gov.tools.previous_review(pending["get_time"]) is None
        decided = await gov.tools.decide_review(pending["get_time"].id, True, actor_key_id=3)
        assert decided is not None
        assert decided.status is PinStatus.APPROVED
        assert await gov.tools.decide_review(pending["get_time"].id, False, actor_key_id=3) is None

        assert not gov.tools.held_for_review(get_time)
        assert [tool.name for tool in gov.tools.offer(["user"]).tools] == ["get_time"]
        ticket = gov.tools.may_run(ToolCall("c2", "get_time", {}), ["user"]).ticket
        assert ticket is not None
        assert (await gov.tools.run(ticket)).content == "12:00 UTC"
        assert gov.desk.ran == [("get_time", {})]
        approved = await gov.tools.reviews(PinStatus.APPROVED)
        assert [pin.tool_name for pin in approved] == ["get_time"]


async def test_a_rejected_definition_stays_held(governed: GovernedFactory) -> None:
    async with governed(enabled=True) as gov:
        pending = {pin.tool_name: pin for pin in await gov.tools.reviews()}
        await gov.tools.decide_review(pending["get_time"].id, False, actor_key_id=3)
        get_time = gov.tools.tool("get_time")
        assert get_time is not None
        assert gov.tools.held_for_review(get_time)
        assert gov.tools.offer(["user"]).tools == ()


async def test_an_approval_on_one_replica_reaches_a_replica_started_later(
    governed: GovernedFactory,
) -> None:
    async with governed(enabled=True) as first:
        [pin] = [pin for pin in await first.tools.reviews() if pin.tool_name == "get_time"]
        await first.tools.decide_review(pin.id, True, actor_key_id=3)
        async with governed(enabled=True) as second:
            assert [t.name for t in second.tools.offer(["user"]).tools] == ["get_time"]


async def test_a_trusted_server_skips_review(governed: GovernedFactory) -> None:
    async with governed(enabled=True, trusted_servers=["desk"]) as gov:
        assert [t.name for t in gov.tools.offer(["user"]).tools] == [
            "get_time",
            "transfer_money",
        ]
        assert await gov.tools.reviews() == []


async def test_with_pinning_off_nothing_is_held(governed: GovernedFactory) -> None:
    async with governed(enabled=False) as gov:
        assert all(not gov.tools.held_for_review(tool) for tool in gov.tools.all_tools())
        assert await gov.tools.reviews() == []
