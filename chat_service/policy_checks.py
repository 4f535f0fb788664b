"""The one policy decision, taken and audited at each stage of a call, and the denial it ends in.

Proposal, approval and execution all ask ``ToolGovernance.decide``; each verdict is audited as
``tool_call.policy_checked`` (stage, allowed, denial, reason), and a denial at any stage ends the
call ``denied_by_policy`` with the reason as the model's tool result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime

from chat_service.tool_call_view import CallState, ToolCallView
from chat_service.tool_calls import Announce, Move, PendingAudit, ToolCallStore
from governance import KeyState, Stage, ToolGovernance, Verdict
from llm_service.types import ToolCall, ToolResultMessage


def result_message(call: ToolCallView, content: str, is_error: bool) -> ToolResultMessage:
    return ToolResultMessage(call.call_id, content, name=call.tool_name, is_error=is_error)


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
        expected: CallState,
        reason: str,
        actor_key_id: int | None = None,
        decision: dict[str, object] | None = None,
        *,
        prior: PendingAudit | None = None,
        announce: Announce | None = None,
    ) -> Move:
        """The move ending the call ``denied_by_policy``; the model is told why.
        ``decision``: the approver's fields, when the denial answered an approval; ``announce``:
        the turn event stored with the move."""
        return Move(
            expected,
            CallState.DENIED_BY_POLICY,
            changes={
                "policy_reason": reason,
                "result": reason,
                "result_is_error": True,
                "finished_at": self._clock(),
                **(decision or {}),
            },
            actor_key_id=actor_key_id,
            result_message=result_message(view, f"Denied by policy: {reason}", True),
            prior=prior,
            announce=announce,
        )
