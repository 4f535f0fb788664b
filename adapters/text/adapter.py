"""Native tool calling, to the caller, over a model that only produces text.

Wraps any ``ChatAdapter`` (usually the OpenAI-compatible one in front of vLLM, llama.cpp or
TGI): the request is rewritten for the model's text format, and calls are parsed out of the
reply, whole or streamed, so the caller sees ``tool_calls``, ``ToolCallDelta`` events and
``finish_reason: tool_calls`` exactly as from a native API.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial

from adapters.text.base import Call, Item, Reasoning, Text, ToolFormat
from adapters.text.history import declared_schemas, text_request
from adapters.text.jsonscan import dumps
from adapters.text.recover import DeclaredTools
from adapters.text.scan import ContentJoin, StreamParser
from adapters.text.select import choose, resolve
from adapters.text.served import served_model
from llm_service.config import ModelConfig
from llm_service.streaming import (
    AnsweredBy,
    Finished,
    ReplyEvent,
    response_events,
    stream_reply,
    whole_reply,
)
from llm_service.types import (
    ChatAdapter,
    ChatRequest,
    ChatResponse,
    StreamDone,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
)

Delta = TextDelta | ThinkingDelta | ToolCallDelta


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def with_text_tools(
    config: ModelConfig, adapter: ChatAdapter, api_key: str | None = None
) -> ChatAdapter:
    """The adapter a model's ``tool_format`` asks for: itself for ``native``, else wrapped.

    ``auto`` on an OpenAI-compatible server starts from the model names and asks the server,
    on the first request, for its chat template and the name behind a served alias, with the
    model's API key (a server behind a key answers nothing without it).
    """
    if config.tool_format == "native":
        return adapter
    names = (config.upstream_model, config.name)
    fmt = resolve(config.tool_format, *names)
    detect: Detect | None = None
    if config.tool_format == "auto" and config.provider == "openai" and config.base_url:
        detect = partial(detect_choice, config.base_url, config.upstream_model, names, api_key)
    return TextToolsAdapter(adapter, fmt, detect=detect, reasoning=config.reasoning)


async def detect_choice(
    base_url: str, model: str | None, names: Sequence[str], api_key: str | None = None
) -> Choice:
    served = await served_model(base_url, model, api_key)
    fmt, reasoning_open = choose(served.template, (*served.names, *names))
    return Choice(fmt, reasoning_open)


@dataclass(frozen=True)
class Choice:
    fmt: ToolFormat
    # The chat template ends the prompt inside reasoning (QwQ, DeepSeek-R1).
    reasoning_open: bool = False
    # The reasoning tags, when the model's are not its format's own.
    think_tags: tuple[str, str] | None = None

    def with_reasoning(self, setting: bool | str | None) -> Choice:
        """The model entry's ``reasoning`` over what the template showed (unset: the template)."""
        if setting is None:
            return self
        if setting is False:
            return Choice(self.fmt)
        tags = None if setting is True else reasoning_tags(setting)
        return Choice(self.fmt, reasoning_open=True, think_tags=tags)


def reasoning_tags(opening: str) -> tuple[str, str]:
    """``<think>`` closes with ``</think>``, ``[THINK]`` with ``[/THINK]``."""
    return opening, f"{opening[0]}/{opening[1:]}"


Detect = Callable[[], Awaitable[Choice]]


class TextToolsAdapter:
    def __init__(
        self,
        inner: ChatAdapter,
        fmt: ToolFormat,
        new_id: Callable[[], str] = new_call_id,
        *,
        detect: Detect | None = None,
        reasoning: bool | str | None = None,
    ) -> None:
        self._inner = inner
        self._reasoning = reasoning
        self._choice = Choice(fmt).with_reasoning(reasoning)
        self._detect = detect
        self._detecting = asyncio.Lock()
        self._new_id = new_id
        self.provider = inner.provider

    @property
    def format(self) -> ToolFormat:
        return self._choice.fmt

    async def _chosen(self) -> Choice:
        """The format, once the server was asked (once, by the first request) where it can be."""
        if self._detect is not None:
            async with self._detecting:
                if self._detect is not None:
                    self._choice = (await self._detect()).with_reasoning(self._reasoning)
                    self._detect = None
        return self._choice

    async def complete(self, request: ChatRequest) -> ChatResponse:
        choice = await self._chosen()
        response = await self._inner.complete(text_request(request, choice.fmt))
        # Read as the stream that would have carried it, through the parse the stream uses.
        parse = self._events(choice, request)
        provider = self.provider
        return whole_reply(response_events(response), parse, provider=provider, model="")

    async def stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        choice = await self._chosen()
        inner = partial(self._inner.stream, text_request(request, choice.fmt))
        parse = self._events(choice, request)
        async for event in stream_reply(inner, parse, provider=self.provider, model=""):
            yield event

    def _events(self, choice: Choice, request: ChatRequest) -> ReplyEvents:
        tools = DeclaredTools(declared_schemas(request))
        return ReplyEvents(
            choice.fmt,
            tools,
            self._new_id,
            reasoning_open=choice.reasoning_open,
            think_tags=choice.think_tags,
        )

    async def probe(self) -> str | None:
        return await self._inner.probe()

    async def aclose(self) -> None:
        await self._inner.aclose()


class ReplyEvents:
    """Turns the inner stream's text into content, reasoning and tool-call events."""

    def __init__(
        self,
        fmt: ToolFormat,
        tools: DeclaredTools | Iterable[str],
        new_id: Callable[[], str],
        *,
        reasoning_open: bool = False,
        think_tags: tuple[str, str] | None = None,
    ) -> None:
        if not isinstance(tools, DeclaredTools):
            tools = DeclaredTools.unconstrained(frozenset(tools))
        self._parser = StreamParser(
            fmt, tools, reasoning_open=reasoning_open, think_tags=think_tags
        )
        self._content = ContentJoin()
        self._new_id = new_id
        self._calls = 0

    def __call__(self, event: StreamEvent) -> Iterator[ReplyEvent]:
        """The inner stream's event as this reply's events; its end ends the reply."""
        if isinstance(event, StreamDone):
            yield from self.finish()
            done = event.response
            yield AnsweredBy(done.model)
            yield done.usage
            yield Finished(done.finish_reason, done.stop_sequence)
        else:
            yield from self.feed(event)

    def feed(self, event: StreamEvent) -> Iterator[Delta]:
        if isinstance(event, TextDelta):
            yield from self._events(self._parser.feed(event.text))
        elif isinstance(event, ThinkingDelta):
            self._parser.reasoning_separate()
            yield event
        # Native ToolCallDeltas cannot occur: the request carried no tools.

    def finish(self) -> Iterator[Delta]:
        yield from self._events(self._parser.finish())
        rest = self._content.finish()
        if rest:
            yield TextDelta(rest)

    def _events(self, items: list[Item]) -> Iterator[Delta]:
        for item in items:
            if isinstance(item, Text):
                text = self._content.text(item.text)
                if text:
                    yield TextDelta(text)
                continue
            self._content.block()
            if isinstance(item, Reasoning):
                yield ThinkingDelta(item.text)
            else:
                yield self._call(item)

    def _call(self, call: Call) -> ToolCallDelta:
        index = self._calls
        self._calls += 1
        return ToolCallDelta(index, self._new_id(), call.name, dumps(call.arguments))
