"""The one policy decision, taken and audited at each stage of a call, and the denial it ends in.

Proposal, approval and execution all ask ``ToolGovernance.decide``; each verdict is audited as
``tool_call.policy_checked`` (stage, allowed, denial, reason), and a denial at any stage ends the
call ``denied_by_policy`` with the reason as the model's tool result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime

from chat_service.tool_call_view import ToolCallView
from chat_service.tool_calls import ToolCallStore
from chat_service.transitions import Decision, Deny, PendingAudit
from governance import KeyState, Stage, ToolGovernance, Verdict
from llm_service.types import ToolCall


class PolicyChecks:
    def __init__(
        self, tools: ToolGovernance, calls: ToolCallStore, clock: Callable[[], datetime]
    ) -> None:
        self._tools = tools
        self._calls = calls
        self._clock = clock

    async def check(
        self,
        view: ToolCallView,
        stage: Stage,
        *,
        call: ToolCall | None = None,
        roles: Iterable[str] | None = None,
        actor_key_id: int | None = None,
    ) -> Verdict:
        """Decide on the call as stored (``call``: the model's own, at proposal) and audit it.
        After proposal the definition must still be the one the call was proposed against."""
        verdict, audit = await self.judge(
            view, stage, call=call, roles=roles, actor_key_id=actor_key_id
        )
        await self._calls.audit(view, audit.action, audit.actor_key_id, audit.detail)
        return verdict

    async def judge(
        self,
        view: ToolCallView,
        stage: Stage,
        *,
        call: ToolCall | None = None,
        roles: Iterable[str] | None = None,
        actor_key_id: int | None = None,
        key: KeyState | None = None,
    ) -> tuple[Verdict, PendingAudit]:
        """``check`` whose audit the caller writes with the move the verdict leads to
        (``ToolCallStore.move(prior=...)``): the check is audited, in one commit less.
        ``key``: the requester's key as just read (``ToolGovernance.decide``)."""
        asked = call or ToolCall(view.call_id, view.tool_name, view.arguments)
        proposed = None if stage is Stage.PROPOSE else view.definition_hash or ""
        verdict = await self._tools.decide(
            asked,
            view.requested_by_key_id,
            roles,
            proposed_hash=proposed,
            server=view.server,
            key=key,
        )
        return verdict, PendingAudit(view, "policy_checked", actor_key_id, verdict.as_audit(stage))

    def denial(
        self,
        view: ToolCallView,
        reason: str,
        decision: Decision | None = None,
        *,
        prior: PendingAudit | None = None,
    ) -> Deny:
        """The move ending the call ``denied_by_policy`` from the state it is in; the model is
        told why. ``decision``: the approver's, when the denial answered an approval."""
        return Deny(
            from_state=view.state,
            reason=reason,
            at=self._clock(),
            decision=decision,
            actor_key_id=None if decision is None else decision.key_id,
            prior=prior,
        )
