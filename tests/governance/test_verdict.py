"""The verdict on a call: allowed, or the typed reason why not (told to the model as text)."""

from __future__ import annotations

from typing import Any

from governance import Denial, Stage, Ticket, Verdict
from governance.verdict import Facts, judge
from guardrails import Guardrails, GuardrailSettings
from llm_service.types import ToolCall
from mcp_client.types import StandardizedTool
from tests.governance.conftest import GovernedFactory


def call(name: str, arguments: dict[str, Any] | None = None, raw: str | None = None) -> ToolCall:
    return ToolCall("call-1", name, arguments or {}, raw_arguments=raw)


async def test_an_allowed_call_carries_its_tool_and_whether_it_needs_approval(
    governed: GovernedFactory,
) -> None:
    async with governed() as gov:
        plain = gov.tools.may_run(call("get_time"), ["user"])
        get_time = gov.tools.tool("get_time")
        assert get_time is not None
        # The ticket: what an allowed call may run, exactly (this definition, these arguments).
        assert plain == Verdict(get_time, ticket=Ticket(get_time, {}))
        assert plain.allowed
        assert not plain.requires_approval
        transfer = gov.tools.may_run(call("transfer_money", {"amount": 5}), ["user"])
        assert transfer.allowed
        assert transfer.requires_approval


async def test_each_denial_has_its_kind_and_reason(governed: GovernedFactory) -> None:
    async with governed() as gov:
        await gov.tools.change_policy("get_time", {"enabled": False}, actor_key_id=1)
        cases = [
            (call("no_such_tool"), Denial.UNKNOWN_TOOL, "Tool `no_such_tool` does not exist."),
            (
                call("get_time"),
                Denial.DISABLED,
                "Tool `get_time` is disabled by an administrator.",
            ),
            (
                call("admin_only"),
                Denial.ROLE_NOT_ALLOWED,
                "Tool `admin_only` is not allowed for this caller's roles.",
            ),
            (
                call("transfer_money", raw="{amount: 5"),
                Denial.ARGUMENTS_NOT_AN_OBJECT,
                "Arguments for `transfer_money` are not a JSON object.",
            ),
            (
                call("transfer_money", {"amount": "lots"}),
                Denial.INVALID_ARGUMENTS,
                "Invalid arguments for `transfer_money`: amount: 'lots' is not of type 'integer'",
            ),
        ]
        for denied, denial, reason in cases:
            verdict = gov.tools.may_run(denied, ["user"])
            assert (verdict.denial, verdict.reason) == (denial, reason)
            assert not verdict.allowed
            assert not verdict.requires_approval
        assert gov.tools.may_run(call("no_such_tool"), ["user"]).tool is None
        assert gov.tools.may_run(call("admin_only"), ["admin"]).allowed


def test_arguments_past_the_scan_budget_are_audited_as_not_wholly_scanned() -> None:
    schema = {"type": "object", "properties": {"blob": {"type": "string"}}}
    tool = StandardizedTool(
        "store", "Stores a blob.", schema, "desk", "store", "h1", roles=frozenset({"user"})
    )
    facts = Facts(
        tool=tool,
        held=False,
        server_down=False,
        key=None,
        proposed_hash=None,
        check=None,
        guardrails=Guardrails(GuardrailSettings(max_scan_chars=1024)),
    )
    blob = "word " * 1000

    verdict = judge(call("store", {"blob": blob}), facts, ["user"])

    assert verdict.ticket == Ticket(tool, {"blob": blob})  # arguments are never cut
    audit = verdict.as_audit(Stage.PROPOSE)["guardrails"]
    assert isinstance(audit, dict)
    assert (audit["complete"], audit["findings"]) == (False, [])
