"""Typed hooks through which callers follow a tool call: progress, and a server's request for input.

The catalog never depends on who listens: every hook has a default (no progress listener; every
request for input declined), so callers wire only what they show.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol


@dataclass(frozen=True, slots=True)
class ToolProgress:
    """One ``notifications/progress`` for a call, or a task's status change."""

    progress: float | None  # None: a task reported its status, not a quantity
    total: float | None = None
    message: str | None = None
    task_status: str | None = None  # set for task-augmented calls: working, input_required, ...


class ProgressHook(Protocol):
    async def __call__(self, progress: ToolProgress) -> None: ...


@dataclass(frozen=True, slots=True)
class InputRequest:
    """A server's ``elicitation/create`` during a call: what it asks and in what form."""

    message: str
    mode: Literal["form", "url"] = "form"
    requested_schema: dict[str, Any] = field(default_factory=dict)  # form mode
    url: str | None = None  # url mode


@dataclass(frozen=True, slots=True)
class InputAnswer:
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None  # accept in form mode: the values, per the schema


class InputHook(Protocol):
    async def __call__(self, request: InputRequest) -> InputAnswer: ...


DECLINED = InputAnswer(action="decline")


@dataclass(frozen=True, slots=True)
class CallHooks:
    """What one call's caller listens to. Both optional."""

    on_progress: ProgressHook | None = None
    on_input: InputHook | None = None  # None: requests for input during this call are declined


NO_HOOKS = CallHooks()
