"""Running the detectors over a text or a JSON value, within a budget, and redacting what they
found."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from guardrails.anchors import Text
from guardrails.findings import Detector, Finding
from guardrails.injection import injection_in
from guardrails.personal import personal_data_in
from guardrails.secrets import assignments_in, secret_shapes_in, secret_value, secrets_in

Match = tuple[str, int, int]
Find = Callable[[Text], Iterator[Match]]
FINDERS: Mapping[Detector, Find] = {
    Detector.SECRETS: secrets_in,
    Detector.PERSONAL_DATA: personal_data_in,
    Detector.INJECTION: injection_in,
}
# What runs on the ends of a long text: all but the secrets' shapes, looked for in all of it.
_AT_ENDS: Mapping[Detector, Find] = {**FINDERS, Detector.SECRETS: assignments_in}


@dataclass(frozen=True, slots=True)
class Scan:
    """What a scan found. ``scanned``: characters looked at (the rest was left unscanned for want
    of budget); ``complete``: every running detector looked at all of the value; ``bounded``: the
    span that only the secrets' shapes were looked for in (a long text's middle)."""

    findings: tuple[Finding, ...]
    scanned: int
    complete: bool = True
    bounded: tuple[int, int] | None = None


class Scanner:
    """Runs ``detectors``; at most ``max_chars`` characters per scanned value (the rest is left
    unscanned and the scan says so: the caller decides what to do with it). A text longer than
    ``full_chars`` is scanned for the secrets' shapes (``secret_shapes_in``: provider keys,
    tokens, private keys, credentials in URLs, the cheap part) whole, and by every other
    detector on its first and last ``full_chars // 2`` characters only: its cost stays bounded."""

    def __init__(
        self, detectors: frozenset[Detector], max_chars: int, full_chars: int | None = None
    ) -> None:
        self._finders = [(d, FINDERS[d]) for d in Detector if d in detectors]
        self._max_chars = max_chars
        self._full_chars = max_chars if full_chars is None else min(full_chars, max_chars)

    @property
    def active(self) -> bool:
        return bool(self._finders)

    def scan_text(self, text: str) -> Scan:
        seen = text[: self._max_chars]
        if len(seen) <= self._full_chars or not self._finders:
            return Scan(tuple(self._findings(seen, "")), len(seen), len(seen) == len(text))
        half = self._full_chars // 2
        tail = len(seen) - half
        first, last = Text(seen[:half]), Text(seen[tail:])
        found: dict[Detector, list[Match]] = {}
        for detector, _ in self._finders:
            find = _AT_ENDS[detector]
            found[detector] = [*find(first)]
            found[detector] += ((k, s + tail, e + tail) for k, s, e in find(last))
        if Detector.SECRETS in found:
            found[Detector.SECRETS] += secret_shapes_in(Text(seen))
        findings = tuple(_distinct(found, ""))
        return Scan(findings, len(seen), False, (half, tail))

    def scan_value(self, value: Any) -> Scan:
        """Every string in a JSON value (and each string under a credential-named key, as a
        secret whatever it looks like), in document order, until the budget is spent."""
        budget = _Budget(self._max_chars)
        found = list(self._walk(value, "", None, budget))
        return Scan(tuple(found), self._max_chars - budget.left, budget.complete)

    def _walk(self, value: Any, path: str, key: str | None, budget: _Budget) -> Iterator[Finding]:
        if isinstance(value, str):
            if key is not None and self._named_secret(key, value):
                yield Finding(Detector.SECRETS, "secret_argument", path, 0, len(value))
                return
            yield from self._findings(budget.take(value), path)
        elif isinstance(value, dict):
            for name, item in value.items():
                yield from self._walk(item, f"{path}/{_escape(str(name))}", str(name), budget)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                yield from self._walk(item, f"{path}/{index}", None, budget)

    def _named_secret(self, key: str, value: str) -> bool:
        return any(d is Detector.SECRETS for d, _ in self._finders) and secret_value(key, value)

    def _findings(self, text: str, path: str) -> Iterator[Finding]:
        if text:
            view = Text(text)
            yield from _distinct({d: list(find(view)) for d, find in self._finders}, path)


def _distinct(found: Mapping[Detector, list[Match]], path: str) -> Iterator[Finding]:
    for detector, matches in found.items():
        end = -1
        for kind, start, stop in sorted(matches, key=lambda m: (m[1], -m[2])):
            if stop > end:  # a span inside one already found adds nothing
                yield Finding(detector, kind, path, start, stop)
                end = stop


class _Budget:
    def __init__(self, chars: int) -> None:
        self.left = chars
        self.complete = True

    def take(self, text: str) -> str:
        taken = text[: self.left]
        self.left -= len(taken)
        self.complete = self.complete and len(taken) == len(text)
        return taken


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def redact_text(text: str, findings: tuple[Finding, ...] | list[Finding]) -> str:
    """``text`` with every finding's span replaced by ``[REDACTED:<kind>]``."""
    spans = sorted((f.start, f.end, f.kind) for f in findings)
    parts: list[str] = []
    at = 0
    for start, end, kind in spans:
        if end <= at:
            continue
        parts.append(text[at : max(start, at)])
        parts.append(f"[REDACTED:{kind}]")
        at = end
    parts.append(text[at:])
    return "".join(parts)


def redact_value(value: Any, findings: tuple[Finding, ...] | list[Finding]) -> Any:
    """A copy of the JSON ``value`` with each finding's string redacted (by its path)."""
    by_path: dict[str, list[Finding]] = {}
    for finding in findings:
        by_path.setdefault(finding.path, []).append(finding)
    return _redacted(value, "", by_path) if by_path else value


def _redacted(value: Any, path: str, by_path: dict[str, list[Finding]]) -> Any:
    if isinstance(value, str):
        found = by_path.get(path)
        return value if found is None else redact_text(value, found)
    if isinstance(value, dict):
        return {k: _redacted(v, f"{path}/{_escape(str(k))}", by_path) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(v, f"{path}/{i}", by_path) for i, v in enumerate(value)]
    return value
