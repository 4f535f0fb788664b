"""The raw-text regression corpus: cases read from ``corpus/<format>.yaml``.

Each case is real (or documented) model output with its source, the tools the request declared,
and what the caller must get: content, calls, reasoning. See docs/tool-formats.md for the rules
the expectations follow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

CORPUS = Path(__file__).parent / "corpus"
RULES = frozenset(
    {
        "declared-only",
        "keep-text",
        "broken-is-text",
        "all-or-nothing",
        "bare-is-whole-reply",
        "arguments-object",
        "reasoning-first",
        "end-token",
        "declared-anywhere",
    }
)


@dataclass(frozen=True)
class CorpusCase:
    format: str
    id: str
    source: dict[str, str]
    tools: tuple[str, ...]
    output: str
    content: str | None
    calls: list[tuple[str, dict[str, Any]]]
    reasoning: str | None = None
    tool_choice: str | None = None
    # The chat template ends the prompt with the opening reasoning tag: the model entry's
    # ``reasoning`` (true or the tag), or "template": detected from the served template.
    reasoning_open: bool | str = False
    # Parameter schemas of the declared tools (default: any object).
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict, compare=False)
    rule: str | None = None
    note: str = field(default="", compare=False)

    @property
    def key(self) -> str:
        return f"{self.format}/{self.id}"


def load() -> list[CorpusCase]:
    cases: list[CorpusCase] = []
    for path in sorted(CORPUS.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        cases.extend(_case(data["format"], raw) for raw in data["cases"])
    return cases


def _case(fmt: str, raw: dict[str, Any]) -> CorpusCase:
    calls = [(c["name"], c.get("arguments", {})) for c in raw.get("calls") or ()]
    return CorpusCase(
        format=fmt,
        id=raw["id"],
        source=raw["source"],
        tools=tuple(raw["tools"]),
        output=raw["output"],
        content=raw["content"],
        calls=calls,
        reasoning=raw.get("reasoning"),
        tool_choice=raw.get("tool_choice"),
        reasoning_open=raw.get("reasoning_open", False),
        schemas=raw.get("schemas", {}),
        rule=raw.get("rule"),
        note=raw.get("note", ""),
    )
