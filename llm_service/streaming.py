"""One reply, whole or streamed, from one parse: the skeleton every adapter runs on.

An adapter supplies only how one piece of its provider's reply becomes events (``Parse``): a
stream chunk, or the whole reply, which is read as the stream that would have carried it. The
skeleton folds the events into the final ``ChatResponse`` (``ReplyFold``), passes the deltas on
when streaming (``stream_reply``), and only folds when not (``whole_reply``). Both paths run the
same parse and the same fold, so a whole reply and its stream cannot disagree.

Besides the deltas callers see, a parse reports what only the final response carries, as the
events below; the skeleton consumes them and never passes them on.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Iterable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TypeVar

from llm_service.assemble import arguments_json, finish_reason, tool_call
from llm_service.errors import UpstreamProtocolError
from llm_service.types import (
    AssistantMessage,
    ChatResponse,
    FinishReason,
    StreamDone,
    StreamEvent,
    TextDelta,
    Thinking,
    ThinkingDelta,
    ToolCallDelta,
    Usage,
)


@dataclass(frozen=True, slots=True)
class ThinkingEnd:
    """The thinking block the deltas since the last end filled is complete (Anthropic signs it).

    Without one, consecutive thinking deltas are one block, whatever comes between them.
    """

    signature: str | None = None


@dataclass(frozen=True, slots=True)
class RedactedThinking:
    """A reasoning block the provider sends only encrypted (it arrives whole)."""

    data: str


@dataclass(frozen=True, slots=True)
class AnsweredBy:
    """The upstream model that answered, when the provider says."""

    model: str


@dataclass(frozen=True, slots=True)
class Finished:
    """The provider finished the reply; a stream may still report usage after it."""

    reason: FinishReason
    stop_sequence: str | None = None


# A ``Usage`` event replaces the usage reported so far (providers report running totals).
ReplyEvent = (
    TextDelta
    | ThinkingDelta
    | ToolCallDelta
    | ThinkingEnd
    | RedactedThinking
    | AnsweredBy
    | Finished
    | Usage
)
Chunk = TypeVar("Chunk")
Parse = Callable[[Chunk], Iterable[ReplyEvent]]
Finish = Callable[[ChatResponse], ChatResponse]


@dataclass(slots=True)
class _PendingCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class ReplyFold:
    """Accumulates a reply's events into its ``ChatResponse``."""

    __slots__ = ("_calls", "_finished", "_model", "_open", "_text", "_thinking", "_usage")

    def __init__(self, model: str) -> None:
        self._text: list[str] = []
        self._thinking: list[Thinking] = []
        self._open: list[str] | None = None  # the thinking block being filled
        self._calls: dict[int, _PendingCall] = {}
        self._model = model
        self._usage = Usage()
        self._finished: Finished | None = None

    @property
    def finished(self) -> bool:
        return self._finished is not None

    def add(self, event: ReplyEvent) -> bool:
        """Folds ``event`` in; True when it is a delta a stream passes on to its consumer."""
        # In order of frequency: this runs for every event of every stream.
        if isinstance(event, TextDelta):
            self._text.append(event.text)
            return True
        if isinstance(event, ToolCallDelta):
            self._add_call(event)
            return True
        if isinstance(event, ThinkingDelta):
            if self._open is None:
                self._open = []
            self._open.append(event.text)
            return True
        self._add_info(event)
        return False

    def _add_call(self, delta: ToolCallDelta) -> None:
        pending = self._calls.get(delta.index)
        if pending is None:
            pending = self._calls[delta.index] = _PendingCall()
        if delta.id:
            pending.id = delta.id
        if delta.name:
            pending.name += delta.name
        if delta.arguments:
            pending.arguments.append(delta.arguments)

    def _add_info(self, event: ReplyEvent) -> None:
        if isinstance(event, Usage):
            self._usage = event
        elif isinstance(event, Finished):
            self._finished = event
        elif isinstance(event, AnsweredBy):
            self._model = event.model or self._model
        elif isinstance(event, ThinkingEnd):
            self._close_thinking(event.signature)
        elif isinstance(event, RedactedThinking):
            if self._open is not None:
                self._close_thinking(None)
            self._thinking.append(Thinking(event.data, redacted=True))

    def _close_thinking(self, signature: str | None) -> None:
        text = "".join(self._open) if self._open is not None else ""
        self._thinking.append(Thinking(text, signature=signature or None))
        self._open = None

    def response(self) -> ChatResponse:
        """The reply so far; ``finish_reason`` is ``stop`` unless the provider said otherwise."""
        if self._open is not None:
            self._close_thinking(None)
        calls = tuple(
            tool_call(p.id, p.name, "".join(p.arguments)) for _, p in sorted(self._calls.items())
        )
        end = self._finished or Finished("stop")
        message = AssistantMessage(
            content="".join(self._text) or None, tool_calls=calls, thinking=tuple(self._thinking)
        )
        return ChatResponse(
            message=message,
            finish_reason=finish_reason(end.reason, bool(calls)),
            usage=self._usage,
            model=self._model,
            stop_sequence=end.stop_sequence,
        )


async def stream_reply(
    open_chunks: Callable[[], AsyncGenerator[Chunk, None]],
    parse: Parse[Chunk],
    *,
    provider: str,
    model: str,
    finish: Finish | None = None,
) -> AsyncGenerator[StreamEvent, None]:
    """The deltas of a streamed reply as they come, then one ``StreamDone`` with all of it.

    ``open_chunks`` is called on the first read, so building the request fails inside the
    stream, where the router maps failures; the chunks are closed with the stream, so a caller
    who goes away frees the upstream connection at once. A stream that ends before the provider
    finished the reply is an ``UpstreamProtocolError``: the answer is cut, not complete.
    ``finish``: the adapter's last touch on the assembled response, the same on both paths.
    """
    fold = ReplyFold(model)
    add = fold.add
    async with aclosing(open_chunks()) as chunks:
        async for chunk in chunks:
            for event in parse(chunk):
                if add(event):
                    yield event  # type: ignore[misc]  # add() is True only for deltas
    if not fold.finished:
        raise UpstreamProtocolError(
            f"{provider}'s stream ended before the reply was finished", provider=provider
        )
    response = fold.response()
    yield StreamDone(finish(response) if finish is not None else response)


def whole_reply(
    chunks: Iterable[Chunk],
    parse: Parse[Chunk],
    *,
    provider: str,
    model: str,
    finish: Finish | None = None,
) -> ChatResponse:
    """A whole reply: the fold of the events its parse gives, as a stream of it would."""
    fold = ReplyFold(model)
    for chunk in chunks:
        for event in parse(chunk):
            fold.add(event)
    if not fold.finished:
        raise UpstreamProtocolError(
            f"{provider} answered without a finished reply", provider=provider
        )
    response = fold.response()
    return finish(response) if finish is not None else response


def response_events(response: ChatResponse) -> Iterable[StreamEvent]:
    """A whole canonical response as the stream events that would carry it, ending in its
    ``StreamDone``: for a layer that parses another adapter's stream (``adapters.text``)."""
    for block in response.message.thinking:
        if block.text and not block.redacted:
            yield ThinkingDelta(block.text)
    if response.message.content:
        yield TextDelta(response.message.content)
    for index, call in enumerate(response.message.tool_calls):
        yield ToolCallDelta(index, call.id, call.name, arguments_json(call))
    yield StreamDone(response)
