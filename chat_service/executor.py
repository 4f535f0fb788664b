"""Runs the model's tool calls: policy, the approval gate, then the MCP call."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from datetime import datetime, timedelta

import structlog
from opentelemetry.trace import NoOpTracer, Tracer

from chat_service.call_hooks import CallListeners
from chat_service.config import ToolLoopSettings
from chat_service.events import (
    Stored,
    ToolCallAwaitingApproval,
    ToolCallCompleted,
    ToolCallCreated,
    ToolCallStarted,
    TurnEvent,
)
from chat_service.policy_checks import PolicyChecks, result_message
from chat_service.store import ConversationInfo
from chat_service.tool_call_view import CallState, ToolCallView, draft
from chat_service.tool_calls import Move, Proposal, ToolCallStore
from db.base import utcnow
from db.transactions import Operation
from governance import KeyState, Stage, ToolGovernance
from llm_service.spans import span
from llm_service.types import ToolCall
from mcp_client.hooks import CallHooks
from mcp_client.types import ToolResult

log = structlog.get_logger("chat_service.executor")

__all__ = ["ToolExecutor", "result_message"]


class ToolExecutor:
    def __init__(
        self,
        tools: ToolGovernance,
        calls: ToolCallStore,
        settings: ToolLoopSettings,
        clock: Callable[[], datetime] = utcnow,
        tracer: Tracer | None = None,
        *,
        listeners: CallListeners | None = None,
    ) -> None:
        self._tracer = tracer or NoOpTracer()
        self._listeners = listeners or CallListeners()
        self._tools = tools
        self._calls = calls
        self._settings = settings
        self._clock = clock
        self._checks = PolicyChecks(tools, calls, clock)

    async def run_round(
        self,
        conversation: ConversationInfo,
        calls: tuple[ToolCall, ...],
        round_number: int,
        budget: int,
        *,
        asked: Operation[TurnEvent] | None = None,
    ) -> AsyncIterator[TurnEvent | Stored]:
        """Propose each call with its policy decision (with, for a call policy lets through, its
        start), all in one transaction, then run the started ones concurrently.

        ``asked``: the write of the model's message that asked for the calls, with its event,
        done first in that transaction (``store.completing``): a stored message always has its
        calls, and a round that fails before the proposals leaves no message behind. Calls
        beyond ``budget`` (the turn's remaining tool-call allowance) are denied.
        """
        # Read once: the round's calls are judged (proposed, and started) at the same moment.
        key = await self._tools.key_state(conversation.api_key_id)
        proposals: list[Proposal] = []
        for index, call in enumerate(calls):
            proposal = draft(
                conversation_id=conversation.id,
                call_id=call.id,
                round_number=round_number,
                tool_name=call.name,
                arguments=call.arguments,
                requested_by_key_id=conversation.api_key_id,
            )
            moves = await self._decide(conversation, proposal, call, index >= budget, key)
            proposals.append(Proposal(proposal, ToolCallCreated, moves))
        opened, proposed = await self._calls.propose(proposals, opening=asked)
        # As stored: each event with the write it reports, in this order.
        if opened is not None:
            yield Stored(opened)
        started: list[ToolCallView] = []
        for created, *_, decided in proposed:
            yield Stored(ToolCallCreated(created))
            if decided.state is CallState.EXECUTING:
                started.append(decided)
                yield Stored(ToolCallStarted(decided))
            elif decided.state is CallState.AWAITING_APPROVAL:
                yield Stored(ToolCallAwaitingApproval(decided))
            else:  # denied
                yield Stored(ToolCallCompleted(decided))
        async for event in self._run_all(started, conversation.model):
            yield event

    async def _decide(
        self,
        conversation: ConversationInfo,
        proposal: ToolCallView,
        call: ToolCall,
        over_budget: bool,
        key: KeyState | None,
    ) -> list[Move]:
        """The moves policy decides for a proposed call: denied, held for approval, or approved
        and started (checked again as any approved call is before it runs)."""
        if over_budget:
            reason = "The turn's limit on tool calls is reached."
            return [
                self._checks.denial(
                    proposal, CallState.PROPOSED, reason, announce=ToolCallCompleted
                )
            ]
        verdict, checked = await self._checks.judge(
            proposal, Stage.PROPOSE, call=call, roles=conversation.roles, key=key
        )
        tool = verdict.tool
        if verdict.reason is not None or tool is None:
            log.warning("tool_call_denied", tool=call.name, reason=verdict.reason)
            reason = verdict.reason or "denied"
            denial = self._checks.denial(
                proposal, CallState.PROPOSED, reason, prior=checked, announce=ToolCallCompleted
            )
            return [denial]
        identity: dict[str, object] = {
            "definition_hash": tool.definition_hash,
            "server": tool.server,
        }
        if verdict.requires_approval:
            expires_at = self._clock() + timedelta(seconds=self._settings.approval_expiry_seconds)
            hold = Move(
                CallState.PROPOSED,
                CallState.AWAITING_APPROVAL,
                changes={
                    **identity,
                    "expires_at": expires_at,
                    "approvals_required": verdict.approvals_required,
                },
                prior=checked,
                announce=ToolCallAwaitingApproval,
            )
            return [hold]
        approve = Move(CallState.PROPOSED, CallState.APPROVED, changes=identity, prior=checked)
        approved = replace(
            proposal,
            state=CallState.APPROVED,
            definition_hash=tool.definition_hash,
            server=tool.server,
        )
        return [approve, await self._start(approved, key)]

    async def _start(self, call: ToolCallView, key: KeyState | None = None) -> Move:
        """The move to `executing` of an approved call, decided again at the last moment: a
        key revoked, a role narrowed, a tool disabled or changed since the approval stops the
        call here (the move ends it `denied_by_policy` instead). ``key``: the requester's key
        as read for the proposal the call starts with (else it is read now)."""
        verdict, checked = await self._checks.judge(call, Stage.EXECUTE, key=key)
        if not verdict.allowed:
            reason = verdict.reason or ""
            return self._checks.denial(
                call, CallState.APPROVED, reason, prior=checked, announce=ToolCallCompleted
            )
        return Move(
            CallState.APPROVED,
            CallState.EXECUTING,
            changes={"started_at": self._clock()},
            prior=checked,
            announce=ToolCallStarted,
        )

    async def execute(
        self, calls: list[ToolCallView], model: str | None = None
    ) -> AsyncIterator[TurnEvent | Stored]:
        """Run approved calls; the compare-and-set to `executing` makes each run at most once.
        ``model``: the conversation's, whose config says whether requests for input reach the
        caller."""
        started: list[ToolCallView] = []
        for call in calls:
            moved = await self._calls.move(call.record_id, await self._start(call))
            if moved is None:
                continue
            if moved.state is CallState.EXECUTING:
                started.append(moved)
                yield Stored(ToolCallStarted(moved))
            else:  # denied at the last moment
                yield Stored(ToolCallCompleted(moved))
        async for event in self._run_all(started, model):
            yield event

    async def _run_all(
        self, started: list[ToolCallView], model: str | None
    ) -> AsyncIterator[TurnEvent | Stored]:
        """Run the calls concurrently; what they report while running is yielded as it comes."""
        heard: asyncio.Queue[TurnEvent | None] = asyncio.Queue()
        timeout = self._settings.tool_timeout_seconds
        # A lone call's completion is stored with its settling move: nothing it reported can
        # come after it. Of several, each completion waits for all (stored, as streamed, then).
        alone = len(started) == 1
        runs = asyncio.gather(
            *(
                self._run(
                    call, self._listeners.hooks(call, model, timeout, heard.put_nowait), alone
                )
                for call in started
            )
        )
        runs.add_done_callback(lambda _: heard.put_nowait(None))
        try:
            while (event := await heard.get()) is not None:
                yield event
            finished = await runs
        finally:
            runs.cancel()  # a no-op once done; stops the calls if the turn is abandoned
        for call, stored in finished:
            yield Stored(ToolCallCompleted(call)) if stored else ToolCallCompleted(call)

    async def _run(
        self, call: ToolCallView, hooks: CallHooks, announce: bool
    ) -> tuple[ToolCallView, bool]:
        """The call, run and settled; and whether its completion was stored with the move."""
        # The loop's limit; the catalog applies the tighter of it and the server's call_timeout.
        timeout = self._settings.tool_timeout_seconds
        state = CallState.SUCCEEDED
        try:
            # The catalog enforces the timeout with protocol cancellation; this is the backstop.
            async with asyncio.timeout(timeout + 5):
                with span(self._tracer, f"tool {call.tool_name}") as current:
                    current.set_attribute("gateway.tool_call.record_id", call.record_id)
                    result = await self._tools.call_tool(
                        call.tool_name, call.arguments, timeout, hooks=hooks
                    )
                    current.set_attribute("gateway.tool_error", result.is_error)
        except TimeoutError:
            result, state = (
                ToolResult(f"Tool timed out after {timeout:g}s.", True),
                CallState.TIMED_OUT,
            )
        except Exception as exc:  # a broken tool must not break the turn
            log.exception("tool_call_crashed", tool=call.tool_name)
            result = ToolResult(f"Tool failed: {type(exc).__name__}", is_error=True)
        await self._listeners.call_ended(call, hooks)
        if result.timed_out:
            state = CallState.TIMED_OUT
        elif result.is_error and state is CallState.SUCCEEDED:
            state = CallState.FAILED
        settle = Move(
            CallState.EXECUTING,
            state,
            changes={
                "result": result.content,
                "result_is_error": result.is_error,
                "finished_at": self._clock(),
            },
            result_message=result_message(call, result.content, result.is_error),
            announce=ToolCallCompleted if announce else None,
        )
        moved = await self._calls.move(call.record_id, settle)
        return (moved, announce) if moved is not None else (call, False)
