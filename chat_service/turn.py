"""A conversation turn: the model call, the tool rounds, and pausing for approval."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from time import perf_counter

from chat_service.config import ToolLoopSettings
from chat_service.errors import ConversationBusy, ErrorReport, HistoryTooLarge
from chat_service.events import (
    MessageDelta,
    Stored,
    ToolCallCompleted,
    TurnError,
    TurnEvent,
    TurnFinished,
    TurnStatus,
)
from chat_service.executor import ToolExecutor
from chat_service.messages import message_bytes
from chat_service.store import (
    ConversationInfo,
    ConversationStatus,
    ConversationStore,
    completing,
)
from chat_service.tool_call_view import SETTLED, CallState
from chat_service.tool_calls import ToolCallStore
from governance import ToolGovernance
from llm_service.errors import GatewayError
from llm_service.router import Router
from llm_service.types import (
    AssistantMessage,
    ChatRequest,
    ChatResponse,
    Message,
    StreamDone,
    StreamEvent,
    TextDelta,
    UserMessage,
)

_IDLE = ConversationStatus.IDLE
_RUNNING = ConversationStatus.RUNNING
_PAUSED = ConversationStatus.AWAITING_APPROVAL


@dataclass
class _RoundOutcome:
    again: bool = False


# How the HTTP edge reports an error (its status, type and code): a failed turn keeps it.
ErrorReporter = Callable[[GatewayError], ErrorReport]
# How one model call ended (usage accounting, the spend it held settled): its response and
# latency, or None when it never answered.
ModelCallSettle = Callable[[ChatResponse | None, float], Awaitable[None]]
# Asked before every model call a turn makes, resumed turns included: it holds the call's
# worst-case spend on the key's budgets, or raises (a GatewayError: the turn fails as it reports).
ModelCallGate = Callable[[ConversationInfo, ChatRequest], Awaitable[ModelCallSettle]]


class TurnRunner:
    def __init__(
        self,
        *,
        store: ConversationStore,
        calls: ToolCallStore,
        executor: ToolExecutor,
        router: Router,
        tools: ToolGovernance,
        settings: ToolLoopSettings,
        report: ErrorReporter,
        max_history_bytes: int,
        gate: ModelCallGate | None = None,
    ) -> None:
        self._report = report
        self._gate = gate
        self._max_history_bytes = max_history_bytes
        self._store = store
        self._calls = calls
        self._executor = executor
        self._router = router
        self._tools = tools
        self._settings = settings

    async def start(
        self, conversation_id: str, roles: Iterable[str], message: UserMessage
    ) -> AsyncIterator[TurnEvent]:
        """Begin a turn with the caller's message. One turn at a time per conversation. A
        message the history has no room for is refused before it is stored: a full
        conversation does not grow by the turns it refuses."""
        held = await self._store.history_bytes(conversation_id)
        if held + message_bytes(message) > self._max_history_bytes:
            raise HistoryTooLarge(self._max_history_bytes)
        begun = await self._store.begin_turn(conversation_id, roles, message)
        if begun is None:
            raise ConversationBusy("A turn is already in progress in this conversation.")
        conversation, completed = begun
        yield completed  # stored with the move
        async for event in self._loop(conversation):
            yield event

    async def resume(self, conversation_id: str) -> AsyncIterator[TurnEvent]:
        """After decisions: run approved calls, and continue once the round is settled."""
        conversation = await self._store.get(conversation_id)
        if conversation.status is not _PAUSED:
            return
        async for event in self._continue_if_decided(conversation):
            yield event

    async def _continue_if_decided(
        self, conversation: ConversationInfo
    ) -> AsyncIterator[TurnEvent]:
        approved = [
            c
            for c in await self._calls.for_conversation(conversation.id)
            if c.state is CallState.APPROVED
        ]
        async for event in self._executor.execute(approved, conversation.model):
            yield await self._durable(conversation.id, event)
        if not await self._round_settled(conversation.id):
            return
        if not await self._store.move(conversation.id, _PAUSED, _RUNNING):
            return  # another replica continues the turn
        async for event in self._loop(conversation):
            yield event

    async def _round_settled(self, conversation_id: str) -> bool:
        calls = await self._calls.for_conversation(conversation_id)
        return all(call.state in SETTLED for call in calls)

    async def _loop(self, conversation: ConversationInfo) -> AsyncIterator[TurnEvent]:
        limit = self._settings.turn_timeout_seconds
        try:
            async with asyncio.timeout(limit):
                async for event in self._rounds(conversation):
                    yield event
        except GatewayError as exc:
            failure = TurnError.of(exc, self._report(exc))
            async for event in self._fail(conversation.id, failure):
                yield event
        except TimeoutError:
            message = f"The turn took longer than {limit:g}s."
            timeout = TurnError("turn_timeout", message, error_type="timeout", http_status=504)
            async for event in self._fail(conversation.id, timeout):
                yield event

    async def _fail(self, cid: str, error: TurnError) -> AsyncIterator[TurnEvent]:
        yield await self._durable(cid, error)
        async for event in self._finish(cid, TurnStatus.FAILED):
            yield event

    async def _finish(
        self, cid: str, status: TurnStatus, answer: AssistantMessage | None = None
    ) -> AsyncIterator[TurnEvent]:
        # Stored with the release (and with the answer that ends the turn, if any): a follower
        # that sees the conversation idle must already find how its turn ended.
        finished = TurnFinished(status)
        completed, _ = await self._store.finish_turn(cid, finished, _RUNNING, _IDLE, answer)
        if completed is not None:
            yield completed
        yield finished

    async def _rounds(self, conversation: ConversationInfo) -> AsyncIterator[TurnEvent]:
        """Model call, tool round, again, until an answer without calls, a pause or a limit."""
        while True:
            outcome = _RoundOutcome()
            async for event in self._round(conversation, outcome):
                yield event
            if not outcome.again:
                return

    async def _round(
        self, conversation: ConversationInfo, outcome: _RoundOutcome
    ) -> AsyncIterator[TurnEvent]:
        cid = conversation.id
        history = await self._store.history(cid)
        round_number = _rounds_so_far(history)
        if round_number >= self._settings.max_tool_rounds:
            limit = self._settings.max_tool_rounds
            message = f"The model asked for tools more than {limit} times."
            async for failure in self._fail(cid, TurnError("max_tool_rounds", message)):
                yield failure
            return
        # Tool results and answers grow it within a turn (and other replicas' turns).
        if await self._store.history_bytes(cid) > self._max_history_bytes:
            exceeded = HistoryTooLarge(self._max_history_bytes)
            too_large = TurnError.of(exceeded, self._report(exceeded))
            async for failure in self._fail(cid, too_large):
                yield failure
            return
        answer: AssistantMessage | None = None
        async for event in self._model_call(conversation, history):
            if isinstance(event, AssistantMessage):
                answer = event
            else:
                yield event
        if answer is None or not answer.tool_calls:
            async for event in self._finish(cid, TurnStatus.COMPLETED, answer):
                yield event
            return
        budget = self._settings.max_tool_calls_per_turn - _calls_so_far(history)
        async for event in self._tool_round(conversation, answer, round_number, budget, outcome):
            yield event

    async def _tool_round(
        self,
        conversation: ConversationInfo,
        answer: AssistantMessage,
        round_number: int,
        budget: int,
        outcome: _RoundOutcome,
    ) -> AsyncIterator[TurnEvent]:
        """The round's calls run (or held); another model call follows once all are settled."""
        settled: set[str] = set()
        asked = completing(conversation.id, answer)
        async for reported in self._executor.run_round(
            conversation, answer.tool_calls, round_number, budget, asked=asked
        ):
            event = await self._durable(conversation.id, reported)
            if isinstance(event, ToolCallCompleted) and event.tool_call.state in SETTLED:
                settled.add(event.tool_call.record_id)
            yield event
        # Each call reported settled by the move that settled it: nothing to read back.
        if len(settled) == len(answer.tool_calls) or await self._round_settled(conversation.id):
            outcome.again = True
            return
        async for event in self._park(conversation):
            yield event

    async def _park(self, conversation: ConversationInfo) -> AsyncIterator[TurnEvent]:
        """Pause the turn until every held call of the round is decided."""
        await self._store.move(conversation.id, _RUNNING, _PAUSED)
        yield await self._durable(conversation.id, TurnFinished(TurnStatus.AWAITING_APPROVAL))
        # A decision that landed before the move found the turn `running` and left it to us:
        # pick it up now, or it would wait forever.
        async for event in self._continue_if_decided(conversation):
            yield event

    async def _model_call(
        self, conversation: ConversationInfo, history: Sequence[Message]
    ) -> AsyncIterator[TurnEvent | AssistantMessage]:
        request = ChatRequest(
            messages=tuple(history),
            # Built once per offer (roles, bundle, catalog state), not per model call.
            tools=self._tools.offer(conversation.roles, conversation.bundle).specs,
        )
        settle = await self._gate(conversation, request) if self._gate else _unmetered
        started = perf_counter()
        response: ChatResponse | None = None
        try:
            # Through the router: retries, fallbacks and the circuit breaker apply to turns too.
            routed = await self._router.stream(conversation.model, request)
            async for event in _chained(routed.first, routed.rest):
                if isinstance(event, TextDelta):
                    yield MessageDelta(event.text)
                elif isinstance(event, StreamDone):
                    response = event.response
                    await settle(response, perf_counter() - started)
                    # Stored with the turn's end, or (asking for tools) with the round's
                    # proposals.
                    yield response.message
        finally:
            if response is None:  # failed or abandoned before its end: its hold is released
                await settle(None, perf_counter() - started)

    async def _durable(self, conversation_id: str, event: TurnEvent | Stored) -> TurnEvent:
        if isinstance(event, Stored):  # written with the move it reports
            return event.event
        if event.durable:
            await self._store.add_event(conversation_id, event)
        return event


async def _unmetered(response: ChatResponse | None, seconds: float) -> None:
    return None


async def _chained(
    first: StreamEvent, rest: AsyncIterator[StreamEvent]
) -> AsyncIterator[StreamEvent]:
    yield first
    async for event in rest:
        yield event


def _calls_so_far(history: Sequence[Message]) -> int:
    calls = 0
    for message in reversed(history):
        if isinstance(message, UserMessage):
            break
        if isinstance(message, AssistantMessage):
            calls += len(message.tool_calls)
    return calls


def _rounds_so_far(history: Sequence[Message]) -> int:
    """Tool rounds since the last user message: the turn's position, derived from history."""
    rounds = 0
    for message in reversed(history):
        if isinstance(message, UserMessage):
            break
        if isinstance(message, AssistantMessage) and message.tool_calls:
            rounds += 1
    return rounds
