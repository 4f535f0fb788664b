"""Runs the model's tool calls: policy, the approval gate, then the MCP call."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

import structlog
from opentelemetry.trace import NoOpTracer, Tracer

from chat_service.call_hooks import CallListeners
from chat_service.config import ToolLoopSettings
from chat_service.events import Stored, ToolCallCreated, TurnEvent
from chat_service.policy_checks import PolicyChecks
from chat_service.store import ConversationInfo
from chat_service.tool_call_view import CallState, ToolCallView, draft
from chat_service.tool_calls import Proposal, ToolCallStore
from chat_service.transitions import (
    Approve,
    Hold,
    Identity,
    Lose,
    Outcome,
    PendingAudit,
    Settle,
    Start,
    TimeOut,
    Transition,
)
from db.base import utcnow
from db.transactions import Operation
from governance import KeyState, Stage, Ticket, ToolGovernance
from guardrails import Screening
from llm_service.spans import span
from llm_service.types import ImagePart, ToolCall
from mcp_client.hooks import CallHooks
from mcp_client.types import ToolResult

log = structlog.get_logger("chat_service.executor")


@dataclass(frozen=True, slots=True)
class _Decided:
    """The transitions policy decided for a call, and (when it starts) the ticket it runs."""

    moves: list[Transition]
    ticket: Ticket | None = None


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
        on_screened: Callable[[Screening], None] | None = None,
    ) -> None:
        """``on_screened`` hears each guardrail screening that found something: a call's
        arguments when it is proposed, a result before the model sees it (metrics)."""
        self._on_screened = on_screened or (lambda _: None)
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
        tickets: dict[str, Ticket] = {}
        for index, call in enumerate(calls):
            proposal = draft(
                conversation_id=conversation.id,
                call_id=call.id,
                round_number=round_number,
                tool_name=call.name,
                arguments=call.arguments,
                requested_by_key_id=conversation.api_key_id,
            )
            decided = await self._decide(conversation, proposal, call, index >= budget, key)
            if decided.ticket is not None:
                tickets[proposal.record_id] = decided.ticket
            proposals.append(Proposal(proposal, decided.moves))
        opened, proposed = await self._calls.propose(proposals, opening=asked)
        # As stored: each event with the write it reports, in this order.
        if opened is not None:
            yield Stored(opened)
        started: list[tuple[ToolCallView, Ticket]] = []
        for stored, (created, *moved) in zip(proposals, proposed, strict=True):
            yield Stored(ToolCallCreated(created))
            for move, view in zip(stored.then, moved, strict=True):
                reported = move.reported(view)
                if reported is not None:
                    yield Stored(reported)
            if moved and moved[-1].state is CallState.EXECUTING:
                started.append((moved[-1], tickets[created.record_id]))
        async for event in self._run_all(started, conversation.model):
            yield event

    async def _decide(
        self,
        conversation: ConversationInfo,
        proposal: ToolCallView,
        call: ToolCall,
        over_budget: bool,
        key: KeyState | None,
    ) -> _Decided:
        """The transitions policy decides for a proposed call: denied, held for approval, or
        approved and started (checked again as any approved call is before it runs)."""
        if over_budget:
            reason = "The turn's limit on tool calls is reached."
            return _Decided([self._checks.denial(proposal, reason)])
        verdict, checked = await self._checks.judge(
            proposal, Stage.PROPOSE, call=call, roles=conversation.roles, key=key
        )
        tool = verdict.tool
        if verdict.screening is not None:
            self._on_screened(verdict.screening)
        if verdict.reason is not None or tool is None:
            log.warning("tool_call_denied", tool=call.name, reason=verdict.reason)
            reason = verdict.reason or "denied"
            return _Decided([self._checks.denial(proposal, reason, prior=checked)])
        identity = Identity(tool.server, tool.definition_hash)
        if verdict.requires_approval:
            expires_at = self._clock() + timedelta(seconds=self._settings.approval_expiry_seconds)
            hold = Hold(
                identity=identity,
                expires_at=expires_at,
                approvals_required=verdict.approvals_required,
                reason=verdict.hold_reason,
                prior=checked,
            )
            return _Decided([hold])
        approve = Approve(identity=identity, prior=checked)
        start, ticket = await self._start(approve.applied(proposal), key)
        return _Decided([approve, start], ticket)

    async def _start(
        self, call: ToolCallView, key: KeyState | None = None
    ) -> tuple[Transition, Ticket | None]:
        """The move to `executing` of an approved call, decided again at the last moment, and
        the ticket it runs: a key revoked, a role narrowed, a tool disabled or changed since the
        approval stops the call here (the move ends it `denied_by_policy` instead). ``key``: the
        requester's key as read for the proposal the call starts with (else it is read now)."""
        verdict, checked = await self._checks.judge(call, Stage.EXECUTE, key=key)
        if verdict.ticket is None:
            reason = verdict.reason or ""
            return self._checks.denial(call, reason, prior=checked), None
        return Start(at=self._clock(), prior=checked), verdict.ticket

    async def execute(
        self, calls: list[ToolCallView], model: str | None = None
    ) -> AsyncIterator[TurnEvent | Stored]:
        """Run approved calls; the compare-and-set to `executing` makes each run at most once.
        ``model``: the conversation's, whose config says whether requests for input reach the
        caller."""
        started: list[tuple[ToolCallView, Ticket]] = []
        for call in calls:
            move, ticket = await self._start(call)
            moved = await self._calls.move(call.record_id, move)
            if moved is None:
                continue
            reported = move.reported(moved)
            if reported is not None:
                yield Stored(reported)
            if ticket is not None and moved.state is CallState.EXECUTING:
                started.append((moved, ticket))
        async for event in self._run_all(started, model):
            yield event

    async def _run_all(
        self, started: list[tuple[ToolCallView, Ticket]], model: str | None
    ) -> AsyncIterator[TurnEvent | Stored]:
        """Run the calls concurrently; what they report while running, and each one's
        completion (stored with the move that settles it), is yielded as it comes."""
        heard: asyncio.Queue[TurnEvent | Stored | None] = asyncio.Queue()
        timeout = self._settings.tool_timeout_seconds

        async def run(call: ToolCallView, ticket: Ticket) -> None:
            hooks = self._listeners.hooks(call, model, timeout, heard.put_nowait)
            move, settled = await self._run(call, ticket, hooks)
            completed = None if settled is None else move.reported(settled)
            if completed is not None:
                heard.put_nowait(Stored(completed))

        runs = asyncio.gather(*(run(call, ticket) for call, ticket in started))
        runs.add_done_callback(lambda _: heard.put_nowait(None))
        try:
            while (event := await heard.get()) is not None:
                yield event
            await runs
        finally:
            runs.cancel()  # a no-op once done; stops the calls if the turn is abandoned

    async def _run(
        self, call: ToolCallView, ticket: Ticket, hooks: CallHooks
    ) -> tuple[Transition, ToolCallView | None]:
        """The call's ticket, run, and the move that settles it with the call as it left it
        (None: another move came first)."""
        # The loop's limit; the catalog applies the tighter of it and the server's call_timeout.
        timeout = self._settings.tool_timeout_seconds
        timed_out = False
        try:
            # The catalog enforces the timeout with protocol cancellation; this is the backstop.
            async with asyncio.timeout(timeout + 5):
                with span(self._tracer, f"tool {call.tool_name}") as current:
                    current.set_attribute("gateway.tool_call.record_id", call.record_id)
                    result = await self._tools.run(ticket, timeout, hooks=hooks)
                    current.set_attribute("gateway.tool_error", result.is_error)
        except TimeoutError:
            result, timed_out = ToolResult(f"Tool timed out after {timeout:g}s.", True), True
        except Exception as exc:  # a broken tool must not break the turn
            log.exception("tool_call_crashed", tool=call.tool_name)
            result = ToolResult(f"Tool failed: {type(exc).__name__}", is_error=True)
        await self._listeners.call_ended(call, hooks)
        if result.refused is not None:
            log.warning("tool_call_refused", tool=call.tool_name, refused=result.refused)
        result, checked = await self._screen(call, ticket, result)
        # The images the tool returned go to the model whole, after the text (each provider
        # gets them in the form it accepts, docs/providers.md "Tool results").
        images = tuple(ImagePart(image.data_url) for image in result.images)
        ended = Outcome(result.content, result.is_error, self._clock(), images=images)
        if timed_out or result.timed_out:
            settle: Transition = TimeOut(ended=ended, prior=checked)
        elif result.outcome_unknown:
            settle = Lose(ended=ended, prior=checked)
        else:
            settle = Settle(ended=ended, prior=checked)
        return settle, await self._calls.move(call.record_id, settle)

    async def _screen(
        self, call: ToolCallView, ticket: Ticket, result: ToolResult
    ) -> tuple[ToolResult, PendingAudit | None]:
        """The result as the guardrails let the model (and the store) have it, and what they
        found (or left unscanned), audited as ``tool_call.result_checked`` with the move that
        settles the call."""
        screened, screening = await self._tools.screen_result(ticket, result)
        if not screening.findings and screening.complete:
            return screened, None
        self._on_screened(screening)
        return screened, PendingAudit(call, "result_checked", None, screening.as_audit())
