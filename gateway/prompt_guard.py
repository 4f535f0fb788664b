"""The guardrails' detectors on chat prompts (every route served by ``chat_route``), for the keys
and teams an operator names (``guardrails.prompts``; off by default): a finding is observed
(logged and counted), redacted out of the messages before any provider sees them, or refused
with the rule and detector named. With ``completions`` on, whole (non-streamed) answers to
those keys get the same actions."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from dataclasses import replace

import structlog

from accounts.principals import Principal
from gateway.errors import PromptRefused
from guardrails import Action, PromptGuard, Screening
from llm_service.types import (
    ChatRequest,
    ChatResponse,
    Message,
    StreamDone,
    StreamEvent,
    SystemMessage,
    TextPart,
    UserMessage,
)

log = structlog.get_logger("gateway.prompt_guard")

# Where a scanned text sits: (message index, part index; None for a message's whole content).
Place = tuple[int, int | None]


class PromptGuardrail:
    def __init__(self, guard: PromptGuard, observe: Callable[[Screening], None]) -> None:
        self._guard = guard
        self._observe = observe

    def screen(self, principal: Principal, request: ChatRequest) -> ChatRequest:
        """The request as it may go to the model; raises ``PromptRefused`` on a denial."""
        if not self._guard.applies(principal.name, principal.team):
            return request
        places, texts = _texts(request.messages)
        redacted = self._redacted(principal, texts, "prompt", "The request was refused. ")
        if redacted is None:
            return request
        return replace(request, messages=_rewritten(request.messages, places, redacted))

    def screen_answer(self, principal: Principal, response: ChatResponse) -> ChatResponse:
        """A whole answer as it may go back (``guardrails.prompts.completions``); raises
        ``PromptRefused`` on a denial. Streamed answers are not screened (sent as they come)."""
        text = response.message.content
        if not self._guard.completions or not text:
            return response
        if not self._guard.applies(principal.name, principal.team):
            return response
        redacted = self._redacted(principal, [text], "answer", "The answer was withheld. ")
        if redacted is None:
            return response
        return replace(response, message=replace(response.message, content=redacted[0]))

    def screen_text(self, principal: Principal, text: str) -> str:
        """A conversation message as it may go to the model (the conversation API)."""
        if not self._guard.applies(principal.name, principal.team):
            return text
        redacted = self._redacted(principal, [text], "prompt", "The message was refused. ")
        return text if redacted is None else redacted[0]

    async def observed(
        self, principal: Principal, first: StreamEvent, rest: AsyncGenerator[StreamEvent, None]
    ) -> AsyncGenerator[StreamEvent, None]:
        """A streamed answer's events, passed on as they come; the whole answer, once its last
        event arrives, is screened for the record only (counted and logged: its text is already
        with the caller, so it is neither redacted nor refused)."""
        applies = self._guard.completions and self._guard.applies(principal.name, principal.team)
        event: StreamEvent | None = first
        try:
            while event is not None:
                if applies and isinstance(event, StreamDone) and event.response.message.content:
                    self._observed(principal, event.response.message.content)
                yield event
                event = await anext(rest, None)
        finally:
            await rest.aclose()

    def _observed(self, principal: Principal, text: str) -> None:
        screening = self._guard.screen([text])
        if screening.findings:
            # Counted as observed: nothing was done to the text.
            observed = {d: (Action.OBSERVE, rule) for d, (_, rule) in screening.actions.items()}
            self._observe(replace(screening, actions=observed))
            log.info(
                "prompt_guardrail",
                key=principal.name,
                text="streamed answer",
                **screening.as_audit(),
            )

    def _redacted(
        self, principal: Principal, texts: list[str], where: str, refusal: str
    ) -> list[str] | None:
        """The texts redacted where the guardrails ask (None: leave them as they are); each
        finding is counted and logged; a denial raises ``PromptRefused`` naming its rule."""
        screening = self._guard.screen(texts)
        if not screening.findings:
            return None
        self._observe(screening)
        log.info("prompt_guardrail", key=principal.name, text=where, **screening.as_audit())
        if screening.action is Action.DENY:
            raise PromptRefused(refusal + screening.explain(where))
        if screening.action is not Action.REDACT:
            return None
        redacted: list[str] = screening.value
        return redacted


def _texts(messages: tuple[Message, ...]) -> tuple[list[Place], list[str]]:
    places: list[Place] = []
    texts: list[str] = []
    for index, message in enumerate(messages):
        if isinstance(message, SystemMessage) or (
            isinstance(message, UserMessage) and isinstance(message.content, str)
        ):
            places.append((index, None))
            texts.append(str(message.content))
        elif isinstance(message, UserMessage) and not isinstance(message.content, str):
            for part_index, part in enumerate(message.content):
                if isinstance(part, TextPart):
                    places.append((index, part_index))
                    texts.append(part.text)
    return places, texts


def _rewritten(
    messages: tuple[Message, ...], places: list[Place], texts: list[str]
) -> tuple[Message, ...]:
    rewritten = list(messages)
    for (index, part_index), text in zip(places, texts, strict=True):
        message = rewritten[index]
        if isinstance(message, SystemMessage) or part_index is None:
            rewritten[index] = replace(message, content=text)
        elif isinstance(message, UserMessage) and not isinstance(message.content, str):
            parts = list(message.content)
            part = parts[part_index]
            if isinstance(part, TextPart):
                parts[part_index] = replace(part, text=text)
            rewritten[index] = replace(message, content=tuple(parts))
    return tuple(rewritten)
