"""Whether a principal may run a tool call now, and if not why: the policy decision.

The decision is made when a call is proposed, when a human approves it and immediately before it
runs (``Stage``), whatever the model was offered and whatever changed in between.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from governance.approval_rules import ApprovalRules, approval_need
from governance.keys import KeyState
from guardrails import Action, Actions, Guardrails, Screening
from llm_service.types import ToolCall
from mcp_client.types import StandardizedTool
from mcp_client.validation import ArgumentCheck


class Stage(StrEnum):
    """When the decision is taken."""

    PROPOSE = "propose"
    APPROVE = "approve"
    EXECUTE = "execute"


class Denial(StrEnum):
    """Why a call may not run, as a type (the reason text is for the model and the audit)."""

    UNKNOWN_TOOL = "unknown_tool"
    SERVER_UNAVAILABLE = "server_unavailable"
    HELD_FOR_REVIEW = "held_for_review"
    DISABLED = "disabled"
    KEY_REVOKED = "key_revoked"
    ROLE_NOT_ALLOWED = "role_not_allowed"
    DEFINITION_CHANGED = "definition_changed"
    ARGUMENTS_NOT_AN_OBJECT = "arguments_not_an_object"
    INVALID_SCHEMA = "invalid_schema"
    INVALID_ARGUMENTS = "invalid_arguments"
    GUARDRAIL = "guardrail"


@dataclass(frozen=True, slots=True)
class Ticket:
    """What an allowing decision let through, and all that may run: this definition of the tool
    (its server and ``definition_hash`` with it) with these arguments, checked against it. The
    MCP client refuses it when the server lists another definition by the time it runs."""

    tool: StandardizedTool
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Verdict:
    """The decision on one call: allowed when ``denial`` is None.

    ``tool`` is the tool as policy has it; None when no tool of that name exists.
    ``approvals_required``: distinct approvals an allowed call needs before it runs (0: none);
    ``rule``: the approval rule that decided it (None: the tool's own setting); ``ticket``:
    what an allowed call may run; ``screening``: what the guardrails found in the arguments
    (None: nothing found, everything scanned); a hold they ask for shows as ``rule``.
    """

    tool: StandardizedTool | None
    denial: Denial | None = None
    reason: str | None = None
    approvals_required: int = 0
    rule: dict[str, Any] | None = None
    ticket: Ticket | None = None
    screening: Screening | None = None

    @property
    def allowed(self) -> bool:
        return self.denial is None

    @property
    def hold_reason(self) -> str | None:
        """Why the guardrails hold an allowed call for approval (rule, detector, what and
        where), None when they do not."""
        rule = self.rule or {}
        held = rule.get("guardrail_hold", rule)
        why = held.get("why") if "guardrail" in held else None
        return why if isinstance(why, str) else None

    @property
    def requires_approval(self) -> bool:
        """An allowed call that must wait for a human's approval before it runs."""
        return self.allowed and self.approvals_required > 0

    def as_audit(self, stage: Stage) -> dict[str, object]:
        return {
            "stage": stage.value,
            "allowed": self.allowed,
            "denial": None if self.denial is None else self.denial.value,
            "reason": self.reason,
            "approvals_required": self.approvals_required,
            "rule": self.rule,
            **_findings(self.screening),
        }


@dataclass(frozen=True, slots=True)
class Facts:
    """What the decision looks at besides the call, gathered by ``ToolGovernance``.

    ``tool``: the effective tool named by the call (None: no such tool now); ``held``: its
    definition awaits review; ``server_down``: the tool's server (or, for a tool the catalog
    dropped, the server it had) is degraded; ``key``: the requester's key now (None: the key is
    unknown); ``proposed_hash``: the definition the call was proposed against (None at proposal);
    ``check``: the compiled argument check of this definition; ``rules``: the tool's approval
    rules (None: none set); ``guardrails``: what screens the arguments (None: nothing), with
    the ``bundles`` the tool is in (their rules select it) and an admin's actions for it
    (``admin_guardrails``, over every rule).
    """

    tool: StandardizedTool | None
    held: bool
    server_down: bool
    key: KeyState | None
    proposed_hash: str | None
    check: ArgumentCheck | None
    rules: ApprovalRules | None = None
    guardrails: Guardrails | None = None
    bundles: frozenset[str] = frozenset()
    admin_guardrails: Actions | None = None


def judge(call: ToolCall, facts: Facts, roles: Iterable[str] | None) -> Verdict:
    """``roles``: the caller's roles when no key directory speaks for the key (None: the roles
    were checked when the call was proposed, and nothing newer is known)."""
    tool = facts.tool
    denied = _tool_verdict(call, facts)
    if denied is not None or tool is None:
        return denied or Verdict(None, Denial.UNKNOWN_TOOL)
    if facts.key is not None and not facts.key.active:
        reason = "The requesting API key has been revoked or has expired."
        return Verdict(tool, Denial.KEY_REVOKED, reason)
    allowed_roles = facts.key.roles if facts.key is not None else roles
    if allowed_roles is not None and tool.roles.isdisjoint(allowed_roles):
        reason = f"Tool `{call.name}` is not allowed for this caller's roles."
        return Verdict(tool, Denial.ROLE_NOT_ALLOWED, reason)
    if facts.proposed_hash is not None and facts.proposed_hash != tool.definition_hash:
        reason = f"Tool `{call.name}` changed since the call was proposed."
        return Verdict(tool, Denial.DEFINITION_CHANGED, reason)
    verdict = _arguments_verdict(tool, call, facts.check or ArgumentCheck(tool.parameters))
    if not verdict.allowed:
        return verdict
    requires = tool.requires_approval and not tool.auto_approved
    need = approval_need(facts.rules, call.arguments, tool.parameters, requires)
    verdict = replace(verdict, approvals_required=need.approvals, rule=need.rule)
    return _guarded(verdict, tool, call, facts)


def _guarded(verdict: Verdict, tool: StandardizedTool, call: ToolCall, facts: Facts) -> Verdict:
    """An allowed verdict with what the guardrails make of its arguments: denied, held for
    approval, or let through with its ticket (its arguments redacted where they ask)."""
    screening = _screen(tool, call, facts)
    if screening is None or (not screening.findings and screening.complete):
        return replace(verdict, ticket=Ticket(tool, call.arguments))
    if screening.action is Action.DENY:
        reason = f"Tool `{call.name}` denied. " + screening.explain("arguments")
        return Verdict(tool, Denial.GUARDRAIL, reason, screening=screening)
    if screening.action is Action.HOLD:
        rule = _guardrail_rule(screening, verdict.rule)
        verdict = replace(verdict, approvals_required=max(verdict.approvals_required, 1), rule=rule)
    return replace(verdict, ticket=Ticket(tool, screening.value), screening=screening)


def _screen(tool: StandardizedTool, call: ToolCall, facts: Facts) -> Screening | None:
    """The guardrails' answer on the arguments, by the tool's identity (server, its name
    there) and bundles; decided anew at every stage like the rest."""
    if facts.guardrails is None:
        return None
    return facts.guardrails.screen_arguments(
        call.arguments, tool.server, tool.original_name, facts.bundles, facts.admin_guardrails
    )


def _guardrail_rule(screening: Screening, rule: dict[str, Any] | None) -> dict[str, Any]:
    """What the card, the audit and the API show for a hold the guardrails asked for: the rule
    and detector, what was found and where (never the value), beside any approval rule."""
    held = {
        "guardrail": screening.rule,
        "detector": None if screening.detector is None else screening.detector.value,
        "why": screening.explain("arguments"),
        "findings": [finding.as_audit() for finding in screening.decisive()],
    }
    return held if rule is None else {**rule, "guardrail_hold": held}


def _findings(screening: Screening | None) -> dict[str, object]:
    """The audit's ``guardrails`` entry: when something was found, or something left unscanned."""
    if screening is None or (not screening.findings and screening.complete):
        return {}
    return {"guardrails": screening.as_audit()}


def _tool_verdict(call: ToolCall, facts: Facts) -> Verdict | None:
    """The tool's side: None when it exists, is enabled, not held and its server is up."""
    tool = facts.tool
    if facts.server_down:
        reason = f"Tool `{call.name}` is temporarily unavailable."
        return Verdict(tool, Denial.SERVER_UNAVAILABLE, reason)
    if tool is None or facts.held:
        # A held tool is denied like an unknown one: the model learns nothing of it.
        denial = Denial.UNKNOWN_TOOL if tool is None else Denial.HELD_FOR_REVIEW
        return Verdict(tool, denial, f"Tool `{call.name}` does not exist.")
    if not tool.enabled:
        reason = f"Tool `{call.name}` is disabled by an administrator."
        return Verdict(tool, Denial.DISABLED, reason)
    return None


def _arguments_verdict(tool: StandardizedTool, call: ToolCall, check: ArgumentCheck) -> Verdict:
    if call.raw_arguments is not None:
        reason = f"Arguments for `{call.name}` are not a JSON object."
        return Verdict(tool, Denial.ARGUMENTS_NOT_AN_OBJECT, reason)
    if check.schema_problem:
        return Verdict(tool, Denial.INVALID_SCHEMA, f"Tool `{call.name}` has an invalid schema.")
    problems = check.problems(call.arguments)
    if problems:
        reason = f"Invalid arguments for `{call.name}`: " + "; ".join(problems)
        return Verdict(tool, Denial.INVALID_ARGUMENTS, reason)
    return Verdict(tool)
