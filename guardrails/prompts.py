"""The same detectors on model prompts, off by default: on for the keys or teams an operator
names, with one action per detector (``observe``, ``redact`` or ``deny``; nothing holds a
prompt). What is scanned is the caller's own text: system and user messages."""

from __future__ import annotations

from collections.abc import Sequence

from guardrails.findings import Detector, Direction
from guardrails.policy import Screening, decide
from guardrails.scan import Scanner, redact_text
from guardrails.settings import Action, PromptGuardrailSettings

PROMPT_RULE = "prompts"


class PromptGuard:
    def __init__(self, settings: PromptGuardrailSettings, max_chars: int) -> None:
        self.completions = settings.completions
        self._keys = frozenset(settings.keys)
        self._teams = frozenset(settings.teams)
        self._actions = {
            detector: (settings.actions.get(detector, Action.ALLOW), PROMPT_RULE)
            for detector in Detector
        }
        running = frozenset(d for d, (a, _) in self._actions.items() if a is not Action.ALLOW)
        self._scanner = Scanner(running, max_chars)

    def applies(self, key_name: str, team: str | None) -> bool:
        return key_name in self._keys or (team is not None and team in self._teams)

    def screen(self, texts: Sequence[str]) -> Screening:
        """The texts' findings; ``value``: the texts as they may go on (redacted where a REDACT
        detector found something), in order. Each text is scanned on its own budget."""
        findings = []
        redacted: list[str] = []
        complete = True
        for index, text in enumerate(texts):
            scan = self._scanner.scan_text(text)
            complete = complete and scan.complete
            found = [f.at(f"/{index}") for f in scan.findings]
            findings.extend(found)
            acting = [f for f in found if self._actions[f.detector][0] is Action.REDACT]
            redacted.append(redact_text(text, acting) if acting else text)
        screening = decide(Direction.PROMPTS, tuple(findings), complete, self._actions)
        return screening.with_value(redacted)
