"""Native tool calling, to the caller, over a model that only produces text.

Wraps any ``ChatAdapter`` (usually the OpenAI-compatible one in front of vLLM, llama.cpp or
TGI): the request is rewritten for the model's text format, and calls are parsed out of the
reply, whole or streamed, so the caller sees ``tool_calls``, ``ToolCallDelta`` events and
``finish_reason: tool_calls`` exactly as from a native API.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator
from dataclasses import replace

from adapters.text.base import Call, Item, Reasoning, Text, ToolFormat
from adapters.text.history import declared_tools, text_request
from adapters.text.jsonscan import dumps
from adapters.text.scan import ContentJoin, StreamParser, parse_reply
from adapters.text.select import resolve
from llm_service.assemble import StreamAssembler, finish_reason
from llm_service.config import ModelConfig
from llm_service.types import (
    AssistantMessage,
    ChatAdapter,
    ChatRequest,
    ChatResponse,
    StreamDone,
    StreamEvent,
    TextDelta,
    Thinking,
    ThinkingDelta,
    ToolCall,
    ToolCallDelta,
)


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def with_text_tools(config: ModelConfig, adapter: ChatAdapter) -> ChatAdapter:
    """The adapter a model's ``tool_format`` asks for: itself for ``native``, else wrapped."""
    if config.tool_format == "native":
        return adapter
    fmt = resolve(config.tool_format, config.upstream_model, config.name)
    return TextToolsAdapter(adapter, fmt)


class TextToolsAdapter:
    def __init__(
        self, inner: ChatAdapter, fmt: ToolFormat, new_id: Callable[[], str] = new_call_id
    ) -> None:
        self._inner = inner
        self._fmt = fmt
        self._new_id = new_id
        self.provider = inner.provider

    @property
    def format(self) -> ToolFormat:
        return self._fmt

    async def complete(self, request: ChatRequest) -> ChatResponse:
        tools = declared_tools(request)
        response = await self._inner.complete(text_request(request, self._fmt))
        # No native tools were sent, so any calls can only be in the text.
        reply = parse_reply(self._fmt, response.message.content or "", tools)
        calls = tuple(ToolCall(self._new_id(), c.name, c.arguments) for c in reply.calls)
        thinking = response.message.thinking
        if reply.reasoning:
            thinking = (*thinking, Thinking(reply.reasoning))
        message = AssistantMessage(content=reply.content, tool_calls=calls, thinking=thinking)
        reason = finish_reason(response.finish_reason, bool(calls))
        return replace(response, message=message, finish_reason=reason)

    async def stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        events = ReplyEvents(self._fmt, declared_tools(request), self._new_id)
        assembler = StreamAssembler()
        async for event in self._inner.stream(text_request(request, self._fmt)):
            if isinstance(event, StreamDone):
                for out in events.finish():
                    _record(assembler, out)
                    yield out
                done = event.response
                yield StreamDone(assembler.finish(done.finish_reason, done.usage, done.model))
                return
            for out in events.feed(event):
                _record(assembler, out)
                yield out

    async def probe(self) -> str | None:
        return await self._inner.probe()

    async def aclose(self) -> None:
        await self._inner.aclose()


class ReplyEvents:
    """Turns the inner stream's text into content, reasoning and tool-call events."""

    def __init__(self, fmt: ToolFormat, tools: Iterable[str], new_id: Callable[[], str]) -> None:
        self._parser = StreamParser(fmt, frozenset(tools))
        self._content = ContentJoin()
        self._new_id = new_id
        self._calls = 0

    def feed(self, event: StreamEvent) -> Iterator[StreamEvent]:
        if isinstance(event, TextDelta):
            yield from self._events(self._parser.feed(event.text))
        elif isinstance(event, ThinkingDelta):
            yield event
        # Native ToolCallDeltas cannot occur: the request carried no tools.

    def finish(self) -> Iterator[StreamEvent]:
        yield from self._events(self._parser.finish())
        rest = self._content.finish()
        if rest:
            yield TextDelta(rest)

    def _events(self, items: list[Item]) -> Iterator[StreamEvent]:
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


def _record(assembler: StreamAssembler, event: StreamEvent) -> None:
    if isinstance(event, TextDelta):
        assembler.add_text(event.text)
    elif isinstance(event, ThinkingDelta):
        assembler.add_thinking(event.text)
    elif isinstance(event, ToolCallDelta):
        assembler.add_tool_call(event)
