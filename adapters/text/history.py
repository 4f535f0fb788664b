"""Rewriting a canonical request for a model that only reads and writes text.

Tools go into the system prompt in the family's style and no native ``tools`` are sent.
Assistant tool calls become the text the model itself would have written. Tool results become
user text in the family's style, or stay ``tool`` messages where the family's chat template
renders them itself (the Llama templates turn ``tool`` into the ``ipython`` role).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from adapters.text.base import ToolFormat
from adapters.tool_results import images_message, result_text
from llm_service.types import (
    AssistantMessage,
    ChatRequest,
    Message,
    SystemMessage,
    TextPart,
    ToolResultMessage,
    UserMessage,
)


def declared_tools(request: ChatRequest) -> frozenset[str]:
    """The tools a call may name; none when the caller said ``tool_choice: none``."""
    if request.tool_choice == "none":
        return frozenset()
    return frozenset(t.name for t in request.tools)


def declared_schemas(request: ChatRequest) -> dict[str, dict[str, Any]]:
    """The declared tools' parameter schemas, which a recovered call's arguments must fit."""
    if request.tool_choice == "none":
        return {}
    return {t.name: t.parameters for t in request.tools}


def text_request(request: ChatRequest, fmt: ToolFormat) -> ChatRequest:
    messages = _history(request.messages, fmt)
    if declared_tools(request):
        messages = _with_tools_prompt(
            messages, fmt.render_tools(request.tools, request.tool_choice)
        )
    return replace(request, messages=messages, tools=(), tool_choice=None, parallel_tool_calls=None)


def _with_tools_prompt(messages: tuple[Message, ...], prompt: str) -> tuple[Message, ...]:
    if messages and isinstance(messages[0], SystemMessage):
        first = SystemMessage(f"{messages[0].content}\n\n{prompt}")
        return (first, *messages[1:])
    return (SystemMessage(prompt), *messages)


def _history(messages: tuple[Message, ...], fmt: ToolFormat) -> tuple[Message, ...]:
    names: dict[str, str] = {}
    out: list[Message] = []
    run: list[ToolResultMessage] = []  # consecutive results travel together

    def close_run() -> None:
        if run and not fmt.results_as_tool_role:
            out.append(_results_turn(run, fmt, names))
        elif run:
            extra = images_message(run, names)
            out.extend([extra] if extra else [])
        run.clear()

    for message in messages:
        if isinstance(message, ToolResultMessage):
            run.append(message)
            if fmt.results_as_tool_role:
                out.append(_as_text(message, fmt, names))
            continue
        close_run()
        if isinstance(message, AssistantMessage):
            names.update((c.id, c.name) for c in message.tool_calls)
            out.append(_assistant(message, fmt))
        else:
            out.append(message)
    close_run()
    return tuple(out)


def _as_text(
    result: ToolResultMessage, fmt: ToolFormat, names: dict[str, str]
) -> ToolResultMessage:
    """The result rendered in the family's style, from its text form (adapters.tool_results)."""
    name = result.name or names.get(result.tool_call_id, "")
    textual = replace(result, content=result_text(result), is_error=False)
    return replace(textual, content=fmt.render_result(textual, name))


def _results_turn(
    run: list[ToolResultMessage], fmt: ToolFormat, names: dict[str, str]
) -> UserMessage:
    text = "\n".join(str(_as_text(result, fmt, names).content) for result in run)
    extra = images_message(run, names)
    if extra is None:
        return UserMessage(text)
    assert not isinstance(extra.content, str)
    return UserMessage((TextPart(text), *extra.content))


def _assistant(message: AssistantMessage, fmt: ToolFormat) -> AssistantMessage:
    if not message.tool_calls:
        return AssistantMessage(content=message.content)
    calls = fmt.render_calls(message.tool_calls)
    content = f"{message.content}\n{calls}" if message.content else calls
    return AssistantMessage(content=content)
