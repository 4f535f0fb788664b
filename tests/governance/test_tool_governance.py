"""The facade's answers: which tools a principal sees, a tool's effective policy after an admin's
change, and the runtime servers it takes."""

from __future__ import annotations

from sqlalchemy import select

from db.models import AuditEvent
from governance import (
    Denial,
    ToolPolicy,
)
from llm_service.types import ToolCall
from mcp_client import StandardizedTool
from tests.governance.conftest import GovernedFactory


def names(tools: list[StandardizedTool]) -> list[str]:
    return sorted(tool.name for tool in tools)


async def test_each_role_sees_the_tools_it_is_allowed(governed: GovernedFactory) -> None:
    async with governed() as gov:
        assert names(gov.tools.offer(["user"]).tools) == ["get_time", "transfer_money"]
        assert names(gov.tools.offer(["admin"]).tools) == [
            "admin_only",
            "get_time",
            "transfer_money",
        ]
        assert gov.tools.offer(["guest"]).tools == ()
        # Admins list every tool, whatever their roles.
        assert names(gov.tools.all_tools()) == ["admin_only", "get_time", "transfer_money"]


async def test_a_bundle_narrows_what_a_role_sees(governed: GovernedFactory) -> None:
    async with governed() as gov:
        assert gov.tools.bundle_names() == ["clock", "interns"]
        assert names(gov.tools.offer(["user"], "clock").tools) == ["get_time"]
        assert gov.tools.offer(["user"], "no-such-bundle").tools == ()
        # `intern` is granted only the `interns` bundle, so it sees no more than that.
        assert names(gov.tools.offer(["intern"]).tools) == ["get_time"]


async def test_a_policy_change_applies_at_once_and_is_audited(governed: GovernedFactory) -> None:
    async with governed() as gov:
        assert gov.tools.admin_policy("get_time") is None
        stored = await gov.tools.change_policy("get_time", {"enabled": False}, actor_key_id=7)

        assert stored == ToolPolicy("desk", "get_time", enabled=False)
        assert gov.tools.admin_policy("get_time") == stored
        tool = gov.tools.tool("get_time")
        assert tool is not None
        assert not tool.enabled
        assert "get_time" not in names(gov.tools.offer(["user"]).tools)
        disabled = gov.tools.may_run(ToolCall("c1", "get_time", {}), ["user"])
        assert (disabled.denial, disabled.ticket) == (Denial.DISABLED, None)
        assert gov.desk.ran == []

        async with gov.sessions() as session:
            [event] = await session.scalars(
                select(AuditEvent).where(AuditEvent.action == "tool.policy_changed")
            )
        assert (event.actor_key_id, event.tool_name) == (7, "get_time")
        assert event.detail["after"]["enabled"] is False


async def test_changed_roles_and_approval_are_the_tools_effective_policy(
    governed: GovernedFactory,
) -> None:
    async with governed() as gov:
        changes = {"roles": ["admin"], "requires_approval": True}
        await gov.tools.change_policy("get_time", changes, actor_key_id=1)
        tool = gov.tools.tool("get_time")
        assert tool is not None
        assert (tool.roles, tool.requires_approval) == (frozenset({"admin"}), True)
        assert "get_time" not in names(gov.tools.offer(["user"]).tools)
        assert gov.tools.may_run(ToolCall("c1", "get_time", {}), ["admin"]).requires_approval

        # None hands a field back to the config file.
        await gov.tools.change_policy("get_time", {"roles": None}, actor_key_id=1)
        assert "get_time" in names(gov.tools.offer(["user"]).tools)


async def test_another_replica_reads_the_stored_policy_when_it_starts(
    governed: GovernedFactory,
) -> None:
    async with governed() as first:
        await first.tools.change_policy("transfer_money", {"enabled": False}, actor_key_id=1)
        async with governed() as second:
            assert "transfer_money" not in names(second.tools.offer(["user"]).tools)
