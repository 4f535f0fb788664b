"""Typed events of a turn, as streamed to callers and (all but deltas) persisted."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

TurnStatus = Literal["completed", "awaiting_approval", "failed"]


@dataclass(frozen=True, slots=True)
class TurnEvent:
    """``type`` names the event on the wire; ``data`` is its JSON payload."""

    type: str
    data: dict[str, Any]

    @property
    def durable(self) -> bool:
        """Text deltas are not stored: the completed message carries the same text."""
        return self.type != "message.delta"


def message_delta(text: str) -> TurnEvent:
    return TurnEvent("message.delta", {"text": text})


def message_completed(message: dict[str, Any]) -> TurnEvent:
    return TurnEvent("message.completed", {"message": message})


def tool_call_event(kind: str, call: dict[str, Any]) -> TurnEvent:
    return TurnEvent(f"tool_call.{kind}", {"tool_call": call})


def error(code: str, message: str) -> TurnEvent:
    return TurnEvent("error", {"code": code, "message": message})


def turn_finished(status: TurnStatus) -> TurnEvent:
    return TurnEvent("turn.finished", {"status": status})
