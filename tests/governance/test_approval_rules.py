"""Approval rules in the one decision: auto-approve conditions, thresholds, two approvers."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from governance import ApprovalRules, Stage, ToolPolicySettings
from governance.approval_rules import ApprovalNeed, approval_need
from llm_service.types import ToolCall
from tests.governance.conftest import GovernedFactory

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"amount": {"type": "number", "default": 50}, "path": {"type": "string"}},
}


def rules(**values: Any) -> ApprovalRules:
    return ApprovalRules.model_validate(values)


def test_an_auto_approve_condition_lets_a_matching_call_run_directly() -> None:
    auto = rules(
        auto_approve=[
            {"argument": "path", "prefix": "/tmp/"},
            {"argument": "mode", "one_of": ["dry_run", True]},
        ]
    )

    need = approval_need(auto, {"path": "/tmp/a"}, SCHEMA, tool_requires=True)
    assert need == ApprovalNeed(0, {"rule": "auto_approve", "argument": "path", "prefix": "/tmp/"})
    assert approval_need(auto, {"mode": "dry_run"}, SCHEMA, True).approvals == 0
    assert approval_need(auto, {"path": "/etc/passwd"}, SCHEMA, True) == ApprovalNeed(1)
    # A value of another type never matches: 1 is not true, a list is not a prefix.
    assert approval_need(auto, {"mode": 1}, SCHEMA, True).approvals == 1
    assert approval_need(auto, {"path": ["/tmp/a"]}, SCHEMA, True).approvals == 1
    # A tool that needs no approval is not made to need one by an auto-approve rule.
    assert approval_need(auto, {"path": "/etc"}, SCHEMA, tool_requires=False) == ApprovalNeed(0)


def test_a_threshold_wins_over_auto_approval_and_a_tool_that_runs_directly() -> None:
    above = rules(
        approval_above=[{"argument": "amount", "above": 100}],
        auto_approve=[{"argument": "path", "prefix": "/tmp/"}],
    )
    rule = {"rule": "approval_above", "argument": "amount", "above": 100.0}

    assert approval_need(above, {"amount": 101, "path": "/tmp/a"}, SCHEMA, True) == ApprovalNeed(
        1, rule
    )
    assert approval_need(above, {"amount": 101}, SCHEMA, tool_requires=False).approvals == 1
    assert approval_need(above, {"amount": 100}, SCHEMA, tool_requires=False).approvals == 0
    # Absent: the schema's default (50) is what the server would use.
    assert approval_need(above, {}, SCHEMA, tool_requires=False).approvals == 0
    high_default = {"properties": {"amount": {"type": "number", "default": 500}}}
    assert approval_need(above, {}, high_default, tool_requires=False).approvals == 1
    # Not a number (true is not 1 here either): fails closed.
    assert approval_need(above, {"amount": True}, SCHEMA, tool_requires=False).approvals == 1


def test_two_approvers_apply_whenever_approval_is_needed() -> None:
    two = rules(approvers=2, approval_above=[{"argument": "amount", "above": 100}])

    assert approval_need(two, {"amount": 5}, SCHEMA, True) == ApprovalNeed(
        2, {"rule": "approvers", "approvers": 2}
    )
    assert approval_need(two, {"amount": 500}, SCHEMA, False).approvals == 2
    assert approval_need(two, {"amount": 5}, SCHEMA, False).approvals == 0


def test_malformed_rules_are_refused() -> None:
    for bad in [
        {"auto_approve": [{"argument": "x"}]},
        {"auto_approve": [{"argument": "x", "prefix": "a", "one_of": ["b"]}]},
        {"auto_approve": [{"argument": "x", "one_of": []}]},
        {"approval_above": [{"argument": "x"}]},
        {"approvers": 3},
        {"approvers": 1, "unknown": True},
    ]:
        with pytest.raises(ValidationError):
            ApprovalRules.model_validate(bad)
    with pytest.raises(ValidationError, match="has rules twice"):
        ToolPolicySettings.model_validate(
            {"approval_rules": [{"server": "s", "tool": "t"}, {"server": "s", "tool": "t"}]}
        )


async def test_the_decision_applies_an_admins_rules_and_names_the_rule(
    governed: GovernedFactory,
) -> None:
    async with governed() as gov:
        auto = {"auto_approve": [{"argument": "amount", "one_of": [5]}], "approvers": 2}
        await gov.tools.change_policy("transfer_money", {"approval_rules": auto}, actor_key_id=1)

        small = gov.tools.may_run(ToolCall("c1", "transfer_money", {"amount": 5}), ["user"])
        large = gov.tools.may_run(ToolCall("c2", "transfer_money", {"amount": 7}), ["user"])

        assert small.allowed
        assert not small.requires_approval
        audit = small.as_audit(Stage.PROPOSE)
        assert audit["rule"] == {"rule": "auto_approve", "argument": "amount", "one_of": [5]}
        assert audit["approvals_required"] == 0
        assert large.requires_approval
        assert large.approvals_required == 2
        # Invalid arguments are denied before any rule is asked.
        denied = gov.tools.may_run(ToolCall("c3", "transfer_money", {"amount": "5"}), ["user"])
        assert not denied.allowed
        assert denied.approvals_required == 0

        await gov.tools.change_policy("transfer_money", {"approval_rules": None}, actor_key_id=1)
        plain = gov.tools.may_run(ToolCall("c4", "transfer_money", {"amount": 5}), ["user"])
        assert plain.approvals_required == 1
        assert plain.rule is None
