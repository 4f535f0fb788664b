"""Tool results for providers whose tool channel carries only text.

Anthropic takes a result's images and its error flag as they are. OpenAI-style APIs refuse
images in a ``tool`` message and have no error flag, and raw-text models read results as text:
there the flag becomes an ``Error:`` prefix and the images travel in a user message right after
the run of results (a user message between two results would cut the run the API expects to
answer the assistant's calls). docs/providers.md, "Tool results", has the table.
"""

from __future__ import annotations

from dataclasses import replace

from llm_service.types import (
    AssistantMessage,
    ContentPart,
    Message,
    TextPart,
    ToolResultMessage,
    UserMessage,
)

ERROR_PREFIX = "Error: "


def result_text(result: ToolResultMessage) -> str:
    """The result as a text-only channel carries it: its text, the error flag as a prefix, and a
    note where its images went."""
    text = result.text
    if result.images:
        count = len(result.images)
        note = f"[{count} image{'s' if count > 1 else ''} in the next user message]"
        text = f"{text}\n{note}" if text else note
    if result.is_error:
        text = f"{ERROR_PREFIX}{text}" if text else ERROR_PREFIX.strip()
    return text


def images_message(
    results: list[ToolResultMessage], names: dict[str, str] | None = None
) -> UserMessage | None:
    """The images of a run of results, each introduced by the call it answers."""
    parts: list[ContentPart] = []
    for result in results:
        if result.images:
            label = result.name or (names or {}).get(result.tool_call_id, "tool")
            parts.append(TextPart(f"Images from the {label} result (call {result.tool_call_id}):"))
            parts.extend(result.images)
    return UserMessage(tuple(parts)) if parts else None


def text_only_results(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """Every result as text (``result_text``), its images in a user message after its run."""
    out: list[Message] = []
    run: list[ToolResultMessage] = []
    names: dict[str, str] = {}

    def close_run() -> None:
        extra = images_message(run, names)
        if extra is not None:
            out.append(extra)
        run.clear()

    for message in messages:
        if isinstance(message, ToolResultMessage):
            run.append(message)
            out.append(replace(message, content=result_text(message), is_error=False))
            continue
        close_run()
        if isinstance(message, AssistantMessage):
            names.update((call.id, call.name) for call in message.tool_calls)
        out.append(message)
    close_run()
    return tuple(out)
