"""Approval rules an admin sets per tool: when a call needs no approval, when it always needs
one, and how many distinct people must approve it.

The policy decision (``verdict.judge``) applies them to each call's arguments, after the call
is otherwise allowed, and audits the rule that decided. Rules only look at top-level arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Scalar = str | int | float | bool | None
ARGUMENT = Field(min_length=1, max_length=200, description="a top-level argument's name")


class AutoApprove(BaseModel):
    """A call whose argument matches runs without approval: ``one_of`` (the value is one of
    these, e.g. an enum's safe values) or ``prefix`` (a string that starts with it). A prefix
    compares strings as sent: for paths, `/tmp/../etc` starts with `/tmp/`."""

    model_config = ConfigDict(extra="forbid")

    argument: str = ARGUMENT
    one_of: list[Scalar] | None = Field(None, min_length=1, max_length=50)
    prefix: str | None = Field(None, min_length=1, max_length=500)

    @model_validator(mode="after")
    def _one_test(self) -> AutoApprove:
        if (self.one_of is None) == (self.prefix is None):
            raise ValueError("give exactly one of `one_of` and `prefix`")
        return self

    def matches(self, arguments: Mapping[str, Any]) -> bool:
        """Only what the model sent counts (a schema default is the server's claim)."""
        if self.argument not in arguments:
            return False
        value = arguments[self.argument]
        if self.prefix is not None:
            return isinstance(value, str) and value.startswith(self.prefix)
        assert self.one_of is not None
        # 1 == True in Python; an enum of true must not admit 1.
        return any(type(value) is type(option) and value == option for option in self.one_of)

    def describe(self) -> dict[str, Any]:
        test = {"prefix": self.prefix} if self.prefix is not None else {"one_of": self.one_of}
        return {"rule": "auto_approve", "argument": self.argument, **test}


class ApprovalAbove(BaseModel):
    """A call whose numeric argument is over ``above`` always needs approval, even for a tool
    that otherwise runs directly or an auto-approve rule that matches."""

    model_config = ConfigDict(extra="forbid")

    argument: str = ARGUMENT
    above: float = Field(allow_inf_nan=False)

    def exceeded(self, arguments: Mapping[str, Any], defaults: Mapping[str, Any]) -> bool:
        """An absent argument counts at the schema's default (the server would use it); a value
        that is not a number fails closed."""
        value = arguments.get(self.argument, defaults.get(self.argument))
        if value is None:
            return False
        if isinstance(value, bool) or not isinstance(value, int | float):
            return True
        return value > self.above

    def describe(self) -> dict[str, Any]:
        return {"rule": "approval_above", "argument": self.argument, "above": self.above}


class ApprovalRules(BaseModel):
    """One tool's approval rules (``tool_policies.approval_rules`` in the config, or
    ``approval_rules`` in an admin's policy)."""

    model_config = ConfigDict(extra="forbid")

    auto_approve: list[AutoApprove] = Field(
        default_factory=list, max_length=20, description="any one matching: no approval"
    )
    approval_above: list[ApprovalAbove] = Field(
        default_factory=list, max_length=20, description="any one exceeded: approval required"
    )
    approvers: Literal[1, 2] = Field(
        1, description="distinct people who must approve (the requester never counts)"
    )

    def arguments(self) -> set[str]:
        named = [rule.argument for rule in self.auto_approve]
        return {*named, *(rule.argument for rule in self.approval_above)}


class ConfiguredRules(ApprovalRules):
    """Rules for one tool in the config file, named by its server and its name there."""

    server: str = Field(min_length=1, max_length=48)
    tool: str = Field(min_length=1, max_length=200)


@dataclass(frozen=True, slots=True)
class ApprovalNeed:
    """How many distinct approvals a call needs (0: it runs directly) and the rule that said so
    (None: the tool's own setting)."""

    approvals: int
    rule: dict[str, Any] | None = None


def defaults_of(schema: Mapping[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return {}
    return {
        name: spec["default"]
        for name, spec in properties.items()
        if isinstance(spec, dict) and "default" in spec
    }


def approval_need(
    rules: ApprovalRules | None,
    arguments: Mapping[str, Any],
    schema: Mapping[str, Any],
    tool_requires: bool,
) -> ApprovalNeed:
    """``tool_requires``: whether the tool needs approval by its own policy. A threshold rule
    wins over everything, then an auto-approve rule, then the tool's own setting."""
    if rules is None:
        return ApprovalNeed(1 if tool_requires else 0)
    defaults = defaults_of(schema)
    for above in rules.approval_above:
        if above.exceeded(arguments, defaults):
            return ApprovalNeed(rules.approvers, above.describe())
    if not tool_requires:
        return ApprovalNeed(0)
    for auto in rules.auto_approve:
        if auto.matches(arguments):
            return ApprovalNeed(0, auto.describe())
    if rules.approvers > 1:
        return ApprovalNeed(rules.approvers, {"rule": "approvers", "approvers": rules.approvers})
    return ApprovalNeed(1)
