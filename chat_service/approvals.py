"""Human decisions on held tool calls: single-use, bound to the tool definition, expiring.

A call whose approval rules ask for two approvers is released by the second distinct person's
approval; the first is recorded on the call (a partial approval) and survives any replica.
One rejection ends the call whatever approvals it had.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import structlog

from chat_service.config import ToolLoopSettings
from chat_service.errors import (
    ApprovalForbidden,
    ApprovalRefused,
    DecisionConflict,
    SelfApprovalForbidden,
    ToolCallNotFound,
)
from chat_service.policy_checks import PolicyChecks
from chat_service.tool_call_view import ApprovalMark, CallState, ToolCallView
from chat_service.tool_calls import ToolCallStore
from chat_service.transitions import Approve, Decision, Expire, Reject
from db.base import utcnow
from governance import Denial, KeyState, Stage, ToolGovernance

log = structlog.get_logger("chat_service.approvals")

# Told of every decision taken (the call as decided), wherever it was taken (API or admin UI):
# the gateway counts it and resumes the turn.
DecisionObserver = Callable[[ToolCallView], None]


# Denials about the requester rather than the tool: answered 403 rather than 409.
_REQUESTER_DENIALS = frozenset({Denial.KEY_REVOKED, Denial.ROLE_NOT_ALLOWED})


class Approvals:
    def __init__(
        self,
        calls: ToolCallStore,
        tools: ToolGovernance,
        settings: ToolLoopSettings,
        clock: Callable[[], datetime] = utcnow,
        on_decision: DecisionObserver | None = None,
    ) -> None:
        self._calls = calls
        self._tools = tools
        self._settings = settings
        self._clock = clock
        self._on_decision = on_decision
        self._checks = PolicyChecks(tools, calls, clock)

    async def pending(self) -> list[ToolCallView]:
        return await self._calls.in_states([CallState.AWAITING_APPROVAL])

    async def decide(
        self, record_id: str, approver_key_id: int, approve: bool, reason: str | None
    ) -> ToolCallView:
        """Approve or reject a held call: single-use, audited (by the move), then observed."""
        call = await self._calls.get(record_id)
        if call is None:
            raise ToolCallNotFound(f"No tool call `{record_id}`.")
        if call.state is not CallState.AWAITING_APPROVAL:
            raise DecisionConflict(f"The call is `{call.state.value}`, not awaiting a decision.")
        await self._refuse_self_approval(call, approver_key_id)
        if call.expires_at is not None and call.expires_at <= self._clock():
            await self.expire(call)
            raise DecisionConflict("The approval expired; the call was not run.")
        moved = await (
            self._approve(call, approver_key_id, reason)
            if approve
            else self._reject(call, approver_key_id, reason)
        )
        if moved is None:
            raise DecisionConflict("Another decision on this call came first.")
        if self._on_decision is not None and moved.state is not CallState.AWAITING_APPROVAL:
            self._on_decision(moved)
        return moved

    async def _refuse_self_approval(self, call: ToolCallView, approver_key_id: int) -> None:
        """Self-approval is by person or service, not by key: an admin's second key is still
        the admin. Keys without a directory (an embedding program) compare by id."""
        if self._settings.allow_self_approval:
            return
        requester = await self._tools.key_state(call.requested_by_key_id)
        approver = await self._tools.key_state(approver_key_id)
        if not _same_person(call.requested_by_key_id, requester, approver_key_id, approver):
            return
        owner = None if approver is None else approver.owner
        await self._calls.audit(call, "self_approval_refused", approver_key_id, {"owner": owner})
        raise SelfApprovalForbidden("A caller cannot decide on its own tool call.")

    async def _approve(
        self, call: ToolCallView, approver_key_id: int, reason: str | None
    ) -> ToolCallView | None:
        verdict = await self._checks.check(call, Stage.APPROVE, actor_key_id=approver_key_id)
        if not verdict.allowed:
            # The call ends here, and the model is told why; the approver hears it too.
            denial = self._checks.denial(
                call, verdict.reason or "", self._decision(approver_key_id, reason)
            )
            denied = await self._calls.move(call.record_id, denial)
            if denied is None:
                return None
            if self._on_decision is not None:
                self._on_decision(denied)
            refused = ApprovalForbidden if verdict.denial in _REQUESTER_DENIALS else ApprovalRefused
            raise refused(f"The call may no longer run ({verdict.reason}); it was not approved.")
        required = max(call.approvals_required, verdict.approvals_required)
        if required > 1:
            return await self._count_approval(call, approver_key_id, reason, required)
        approve = Approve(
            decision=self._decision(approver_key_id, reason), actor_key_id=approver_key_id
        )
        return await self._calls.move(call.record_id, approve)

    async def _count_approval(
        self, call: ToolCallView, approver_key_id: int, reason: str | None, required: int
    ) -> ToolCallView | None:
        """One of ``required`` distinct approvals: recorded, and the last one releases the call.
        The requester never counts, even where self-approval is allowed."""
        approver = await self._tools.key_state(approver_key_id)
        requester = await self._tools.key_state(call.requested_by_key_id)
        if _same_person(call.requested_by_key_id, requester, approver_key_id, approver):
            owner = None if approver is None else approver.owner
            await self._calls.audit(
                call, "self_approval_refused", approver_key_id, {"owner": owner}
            )
            raise SelfApprovalForbidden("The requester never counts as one of the approvers.")
        owner = None if approver is None else approver.owner
        current: ToolCallView | None = call
        # Another approval landing between the read and the write loses us the compare-and-set:
        # read again and count on top of it.
        for _ in range(3):
            if current is None or current.state is not CallState.AWAITING_APPROVAL:
                return None
            if any(_same_mark(mark, approver_key_id, owner) for mark in current.approvals):
                raise DecisionConflict(
                    "You approved this call already; it needs another admin's approval."
                )
            mark = ApprovalMark(approver_key_id, owner, self._clock(), reason)
            releases = len(current.approvals) + 1 >= required
            decision = self._decision(approver_key_id, reason)
            release = Approve(decision=decision, actor_key_id=approver_key_id) if releases else None
            moved = await self._calls.add_approval(current, mark, release, required)
            if moved is not None:
                if release is None:
                    # Nothing moved, so the move's own log event does not say it.
                    log.info(
                        "tool_call_partially_approved",
                        record_id=moved.record_id,
                        tool=moved.tool_name,
                        approvals=len(moved.approvals),
                        approvals_required=moved.approvals_required,
                        approver_key_id=approver_key_id,
                    )
                return moved
            current = await self._calls.get(call.record_id)
        return None

    async def _reject(
        self, call: ToolCallView, approver_key_id: int, reason: str | None
    ) -> ToolCallView | None:
        reject = Reject(
            decision=self._decision(approver_key_id, reason), actor_key_id=approver_key_id
        )
        return await self._calls.move(call.record_id, reject)

    def _decision(self, approver_key_id: int, reason: str | None) -> Decision:
        return Decision(approver_key_id, self._clock(), reason)

    async def expire(self, call: ToolCallView) -> ToolCallView | None:
        return await self._calls.move(call.record_id, Expire(at=self._clock()))

    async def expire_due(self) -> set[str]:
        """Expire every overdue approval; returns the conversations to resume."""
        now = self._clock()
        touched: set[str] = set()
        for call in await self.pending():
            if call.expires_at is not None and call.expires_at <= now and await self.expire(call):
                touched.add(call.conversation_id)
        return touched


def _same_person(
    requester_id: int, requester: KeyState | None, approver_id: int, approver: KeyState | None
) -> bool:
    if requester is None or approver is None:
        return requester_id == approver_id
    return requester.owner == approver.owner or requester.key_id == approver.key_id


def _same_mark(mark: ApprovalMark, key_id: int, owner: str | None) -> bool:
    return mark.key_id == key_id or (owner is not None and mark.owner == owner)
