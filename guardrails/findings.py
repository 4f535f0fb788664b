"""What a detector found, as data: which detector, what kind, where. Never the value itself."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Detector(StrEnum):
    SECRETS = "secrets"
    PERSONAL_DATA = "personal_data"
    # Heuristic: phrases and chat-template tokens that address the model from inside data.
    INJECTION = "injection"


class Direction(StrEnum):
    """What was scanned: a tool call's arguments, a tool's result, or a model prompt."""

    ARGUMENTS = "arguments"
    RESULTS = "results"
    PROMPTS = "prompts"


@dataclass(frozen=True, slots=True)
class Finding:
    """One match. ``path``: a JSON pointer into the scanned value ("" for a text scanned whole);
    ``start``/``end``: the span in that string, for redaction (kept out of the audit)."""

    detector: Detector
    kind: str
    path: str
    start: int
    end: int

    def at(self, path: str) -> Finding:
        """The same finding at another place (a prompt's message index)."""
        return Finding(self.detector, self.kind, path, self.start, self.end)

    def as_audit(self) -> dict[str, object]:
        """What the audit, the approval card and API errors show: what and where, no value."""
        return {"detector": self.detector.value, "kind": self.kind, "path": self.path or "/"}
