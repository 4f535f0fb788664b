"""A deterministic local model for integration tests that cost nothing.

Without a script it echoes the last user message. With one, the n-th model call of a turn (a turn
starts at the last user message) plays step n; past the end it echoes. The step depends only on
the conversation, so any replica gives the same answer.
"""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from collections.abc import AsyncGenerator, Iterator

from llm_service.assemble import finish_reason
from llm_service.config import MockStep, ModelConfig
from llm_service.errors import error_for_status
from llm_service.types import (
    AssistantMessage,
    ChatRequest,
    ChatResponse,
    Message,
    StreamDone,
    StreamEvent,
    TextDelta,
    TextPart,
    ToolCall,
    ToolCallDelta,
    ToolResultMessage,
    Usage,
    UserMessage,
)

PROVIDER = "mock"


# Prompt estimates kept for the most recent requests' last messages (see `_PromptTokens`).
PROMPT_ESTIMATES_KEPT = 256


class _PromptTokens:
    """The prompt's token estimate, not re-counted for messages an earlier call counted: each
    model call of a conversation passes its earlier messages again, with new ones after them.
    A request that starts with an earlier request's messages (compared as a tuple, which is
    pointer comparisons when they are the same objects) counts only the messages after them."""

    def __init__(self) -> None:
        # id of a request's last message -> (the request's messages, their tokens)
        self._known: OrderedDict[int, tuple[tuple[Message, ...], int]] = OrderedDict()

    def __call__(self, messages: tuple[Message, ...]) -> int:
        start, tokens = 0, 0
        for index in range(len(messages) - 1, -1, -1):
            known = self._known.get(id(messages[index]))
            if known is not None and messages[: index + 1] == known[0]:
                start, tokens = index + 1, known[1]
                break
        tokens += sum(_estimate_tokens(_text_of(m)) for m in messages[start:])
        if messages:
            self._known[id(messages[-1])] = (messages, tokens)
            self._known.move_to_end(id(messages[-1]))
            if len(self._known) > PROMPT_ESTIMATES_KEPT:
                self._known.popitem(last=False)
        return tokens


class MockAdapter:
    provider = PROVIDER

    def __init__(self, config: ModelConfig) -> None:
        self._config = config
        self._prompt_tokens = _PromptTokens()

    async def complete(self, request: ChatRequest) -> ChatResponse:
        return self._answer(request)

    async def stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        response = self._answer(request)
        message = response.message
        for piece in _word_chunks(message.content or ""):
            yield TextDelta(piece)
        for index, call in enumerate(message.tool_calls):
            arguments = json.dumps(call.arguments)
            middle = len(arguments) // 2
            yield ToolCallDelta(
                index=index, id=call.id, name=call.name, arguments=arguments[:middle]
            )
            yield ToolCallDelta(index=index, arguments=arguments[middle:])
        yield StreamDone(response)

    async def probe(self) -> str | None:
        return None

    async def aclose(self) -> None:
        return None

    def _answer(self, request: ChatRequest) -> ChatResponse:
        step = _current_step(self._config.script, request.messages)
        if step is not None and step.error is not None:
            raise error_for_status(step.error.status, step.error.message, provider=PROVIDER)
        text, calls = _render(step, request.messages)
        text, stopped_at = _cut_at_stop(text, request.params.stop)
        prompt = self._prompt_tokens(request.messages)
        prompt += sum(
            _estimate_tokens(json.dumps(t.parameters) + t.description) for t in request.tools
        )
        completion = _estimate_tokens(
            (text or "") + "".join(json.dumps(c.arguments) for c in calls)
        )
        max_tokens = request.params.max_tokens
        truncated = max_tokens is not None and completion > max_tokens and not calls
        if truncated and text is not None and max_tokens is not None:
            text = text[: max_tokens * 4]
            completion = max_tokens
        return ChatResponse(
            message=AssistantMessage(content=text, tool_calls=calls),
            finish_reason=finish_reason("length" if truncated else "stop", bool(calls)),
            usage=Usage(prompt_tokens=prompt, completion_tokens=completion),
            model=self._config.upstream_model,
            stop_sequence=stopped_at,
        )


def _current_step(script: list[MockStep], messages: tuple[Message, ...]) -> MockStep | None:
    position = 0
    for message in reversed(messages):
        if isinstance(message, UserMessage):
            break
        if isinstance(message, AssistantMessage):
            position += 1
    return script[position] if position < len(script) else None


def _render(
    step: MockStep | None, messages: tuple[Message, ...]
) -> tuple[str | None, tuple[ToolCall, ...]]:
    last_user = next((_text_of(m) for m in reversed(messages) if isinstance(m, UserMessage)), "")
    if step is None:
        return f"Echo: {last_user}", ()
    last_result = next((m.text for m in reversed(messages) if isinstance(m, ToolResultMessage)), "")
    text = None
    if step.text is not None:
        text = step.text.replace("{last_user_message}", last_user).replace(
            "{last_tool_result}", last_result
        )
    calls = tuple(
        ToolCall(id=f"call_{len(messages)}_{i}", name=c.name, arguments=dict(c.arguments))
        for i, c in enumerate(step.tool_calls)
    )
    return text, calls


def _cut_at_stop(text: str | None, stops: tuple[str, ...]) -> tuple[str | None, str | None]:
    """Cut the answer before the earliest stop sequence, as real models stop generating there."""
    found = [(text.find(stop), stop) for stop in stops if text and stop and stop in text]
    if not text or not found:
        return text, None
    position, stop = min(found)
    return text[:position], stop


def _text_of(message: Message) -> str:
    if isinstance(message, UserMessage):
        if isinstance(message.content, str):
            return message.content
        return " ".join(p.text for p in message.content if isinstance(p, TextPart))
    if isinstance(message, AssistantMessage):
        return message.content or ""
    if isinstance(message, ToolResultMessage):
        return message.text
    return message.content


def _estimate_tokens(text: str) -> int:
    """About four characters a token, as tokenizers of English text average."""
    return max(1, math.ceil(len(text) / 4)) if text else 0


def _word_chunks(text: str) -> Iterator[str]:
    start = 0
    for index, char in enumerate(text):
        if char == " " and index > start:
            yield text[start : index + 1]
            start = index + 1
    if start < len(text):
        yield text[start:]
