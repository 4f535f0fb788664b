"""What to do about findings, per detector and direction, per tool, server or bundle.

With no configuration at all the defaults are the secure ones: a secret in a tool's arguments
holds the call for approval, a secret in a tool's result is redacted, personal data and injected
instructions are observed (audited and counted, nothing blocked). Rules loosen or tighten that
per bundle, server or tool; the most specific rule wins for each detector and direction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from guardrails.findings import Detector, Direction, Finding
from guardrails.scan import Scanner, redact_text, redact_value
from guardrails.settings import (
    ADMIN_RULE,
    RANK,
    SECURE_DEFAULTS,
    Action,
    Actions,
    GuardrailSettings,
)

DEFAULT_RULE = "default"


@dataclass(frozen=True, slots=True)
class Screening:
    """The guardrails' answer for one scanned value. ``action``: what the strictest finding asks
    (ALLOW when nothing was found); ``detector``, ``rule``: who decided it; ``value``: what may
    pass on (redacted when ``action`` is REDACT, else as given); ``observed``: findings whose
    action is OBSERVE (in shadow mode) beside those acted on; ``bounded``: the span of a long
    value only the secrets' shapes were looked for in."""

    direction: Direction
    findings: tuple[Finding, ...] = ()
    action: Action = Action.ALLOW
    detector: Detector | None = None
    rule: str | None = None
    value: Any = None
    complete: bool = True
    actions: Mapping[Detector, tuple[Action, str]] = field(default_factory=dict)
    bounded: tuple[int, int] | None = None

    @property
    def blocks(self) -> bool:
        return self.action in (Action.HOLD, Action.DENY)

    def explain(self, where: str) -> str:
        """Why a denial or hold, for the model, the API and the card: rule, detector, what and
        where, never the value."""
        kinds = sorted({f"{f.kind} at {f.path or '/'}" for f in self.decisive()})
        detector = self.detector.value if self.detector is not None else ""
        return (
            f"Guardrail rule `{self.rule}` ({detector}, {self.action.value}) found in the "
            f"{where}: {', '.join(kinds)}."
        )

    def decisive(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.detector is self.detector)

    def with_value(self, value: Any) -> Screening:
        return _with_value(self, value)

    def as_audit(self) -> dict[str, object]:
        audit: dict[str, object] = {
            "direction": self.direction.value,
            "action": self.action.value,
            "detector": None if self.detector is None else self.detector.value,
            "rule": self.rule,
            "complete": self.complete,
            "findings": self.audit_findings(),
        }
        if self.bounded is not None:
            audit["shapes_only"] = list(self.bounded)
        return audit

    def audit_findings(self) -> list[dict[str, object]]:
        """Each finding with the action its detector had (what, where, never the value)."""
        return [
            {**f.as_audit(), "action": self.actions[f.detector][0].value} for f in self.findings
        ]


class Guardrails:
    """The configured guardrails; ``screen`` answers for one tool's arguments or result."""

    def __init__(self, settings: GuardrailSettings) -> None:
        self._settings = settings
        self._defaults: Actions = {
            d: {**SECURE_DEFAULTS.get(d, {}), **settings.defaults.get(d, {})} for d in Detector
        }
        self._rules = sorted(settings.rules, key=lambda rule: rule.specificity)

    @property
    def settings(self) -> GuardrailSettings:
        return self._settings

    def actions(
        self,
        direction: Direction,
        server: str,
        tool: str,
        bundles: Iterable[str] = (),
        admin: Actions | None = None,
    ) -> dict[Detector, tuple[Action, str]]:
        """Each detector's action and the rule that set it, for this tool (by its identity);
        ``admin``: an admin's actions for the tool, over every rule."""
        chosen = {
            d: (self._defaults[d].get(direction, Action.ALLOW), DEFAULT_RULE) for d in Detector
        }
        selected = frozenset(bundles)
        for rule in self._rules:  # least specific first: the most specific is applied last
            if rule.selects(server, tool, selected):
                for detector, by_direction in rule.actions.items():
                    if direction in by_direction:
                        chosen[detector] = (by_direction[direction], rule.name)
        for detector, by_direction in (admin or {}).items():
            if direction in by_direction:
                chosen[detector] = (by_direction[direction], ADMIN_RULE)
        return chosen

    def screen_arguments(
        self,
        arguments: dict[str, Any],
        server: str,
        tool: str,
        bundles: Iterable[str] = (),
        admin: Actions | None = None,
    ) -> Screening:
        actions = self.actions(Direction.ARGUMENTS, server, tool, bundles, admin)
        scan = self._scanner(actions).scan_value(arguments)
        screening = decide(Direction.ARGUMENTS, scan.findings, scan.complete, actions)
        redacted = _acted_on(screening, Action.REDACT)
        value = redact_value(arguments, redacted) if redacted else arguments
        return _with_value(screening, value)

    def screen_result(
        self,
        text: str,
        server: str,
        tool: str,
        bundles: Iterable[str] = (),
        admin: Actions | None = None,
        *,
        extra: tuple[Finding, ...] = (),
    ) -> Screening:
        """A result's text: redacted where a REDACT detector found something, cut to its
        scanned part when longer than the budget (unless ``cut_unscanned`` is off). ``extra``:
        findings from outside (an external classifier's), acted on like the detectors'."""
        actions = self.actions(Direction.RESULTS, server, tool, bundles, admin)
        scanner = self._scanner(actions, self._settings.full_scan_chars)
        scan = scanner.scan_text(text)
        found = scan.findings + tuple(
            f for f in extra if actions[f.detector][0] is not Action.ALLOW
        )
        screening = replace(
            decide(Direction.RESULTS, found, scan.complete, actions), bounded=scan.bounded
        )
        value = text
        redacted = _acted_on(screening, Action.REDACT)
        if redacted:
            value = redact_text(text[: scan.scanned], redacted) + text[scan.scanned :]
        if scan.scanned < len(text) and self._settings.cut_unscanned and scanner.active:
            unscanned = len(text) - scan.scanned
            value = value[: len(value) - unscanned] + (
                f"\n[{unscanned} characters not scanned by the guardrails were withheld]"
            )
        return _with_value(screening, value)

    def _scanner(
        self, actions: Mapping[Detector, tuple[Action, str]], full_chars: int | None = None
    ) -> Scanner:
        running = frozenset(d for d, (action, _) in actions.items() if action is not Action.ALLOW)
        return Scanner(running, self._settings.max_scan_chars, full_chars)


def decide(
    direction: Direction,
    findings: tuple[Finding, ...],
    complete: bool,
    actions: Mapping[Detector, tuple[Action, str]],
) -> Screening:
    """What the strictest finding asks, by its detector's action and rule."""
    decisive: tuple[Action, Detector, str] | None = None
    for finding in findings:
        action, rule = actions[finding.detector]
        if decisive is None or RANK[action] > RANK[decisive[0]]:
            decisive = (action, finding.detector, rule)
    if decisive is None:
        return Screening(direction, complete=complete, actions=actions)
    action, detector, rule = decisive
    return Screening(direction, findings, action, detector, rule, None, complete, actions)


def _acted_on(screening: Screening, action: Action) -> list[Finding]:
    return [f for f in screening.findings if screening.actions[f.detector][0] is action]


def _with_value(screening: Screening, value: Any) -> Screening:
    return replace(screening, value=value)
