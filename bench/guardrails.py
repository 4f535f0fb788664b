"""The guardrails' cost and precision: what screening adds to a tool call, and how often each
detector is right on the project's test sets.

    .venv/bin/python -m bench.guardrails

In one process, timed one at a time (``time.perf_counter_ns``, p50 and p95 of ``--runs``),
with the secure defaults (every detector running on results; secrets and personal data on
arguments): a 4 KB argument set (a code snippet, prose, ids and timestamps), a 64 KB result (a
JSON listing of records with ids, URLs, timestamps and prose), and the same 64 KB as dense
prose with numbers (many digit groups for the personal-data detector), each as configured by
default (bounded: ``full_scan_chars``) and scanned whole; and a chat request (a system prompt
and a 2 KB user message) through the prompt guardrail with detection on for its key. Then each
detector alone on those texts, and its precision and recall on tests/guardrails/samples.py.
Writes docs/guardrails-benchmark.md (or --output) and the tables in docs/guardrails.md between
its markers (or --doc).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from accounts.principals import Principal
from bench.stats import percentile
from gateway.prompt_guard import PromptGuardrail
from guardrails import Detector, Guardrails, GuardrailSettings, PromptGuard, PromptGuardrailSettings
from guardrails.anchors import Text
from guardrails.scan import FINDERS
from llm_service.types import ChatRequest, SystemMessage, UserMessage
from tests.guardrails.samples import (
    FALSE_POSITIVES,
    INJECTIONS,
    ORDINARY_PROSE,
    PERSONAL_DATA,
    SECRETS,
)

DOCS = Path(__file__).parents[1] / "docs"
OUTPUT = DOCS / "guardrails-benchmark.md"
DOC = DOCS / "guardrails.md"
_BEGIN, _END = "<!-- bench.guardrails tables -->", "<!-- end of bench.guardrails tables -->"
WORDS = [
    "the",
    "order",
    "was",
    "shipped",
    "to",
    "our",
    "warehouse",
    "on",
    "time",
    "and",
    "the",
    "customer",
    "asked",
    "for",
    "a",
    "refund",
    "because",
    "two",
    "items",
    "arrived",
    "damaged",
    "please",
    "check",
    "the",
    "tracking",
    "page",
    "and",
    "update",
    "the",
    "ticket",
    "status",
]


def _prose(rng: random.Random, size: int) -> str:
    words: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(WORDS) if rng.random() > 0.08 else str(rng.randint(1, 99999))
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:size]


def arguments_4kb(rng: random.Random) -> dict[str, object]:
    code = "def total(items):\n    return sum(item.price * item.quantity for item in items)\n"
    return {
        "path": "src/orders/billing.py",
        "content": (code * 12)[:1500],
        "message": _prose(rng, 2000),
        "ticket": "3f2a6c1e-7b44-4c1a-9a57-2d1f0e6b8c90",
        "at": "2026-11-28T12:00:00Z",
        "labels": ["billing", "bug", "p2"],
    }


def result_64kb(rng: random.Random) -> str:
    records = []
    size = 0
    while size < 65536:
        record = {
            "id": f"{rng.getrandbits(128):032x}",
            "url": f"https://shop.example/orders/{rng.randint(1000, 99999)}",
            "created_at": f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T10:00:00Z",
            "total": round(rng.uniform(1, 999), 2),
            "note": _prose(rng, 160),
        }
        text = json.dumps(record)
        records.append(text)
        size += len(text) + 2
    return ("[" + ", ".join(records) + "]")[:65536]


def timed(run: Callable[[], object], runs: int) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter_ns()
        run()
        times.append((time.perf_counter_ns() - start) / 1000)
    times.sort()
    return percentile(times, 0.5), percentile(times, 0.95)


def precision() -> list[tuple[str, int, int, int, int]]:
    """(detector, positives, found, negatives, false alarms) on the test sets."""
    positives = {
        Detector.SECRETS: list(SECRETS.values()),
        Detector.PERSONAL_DATA: list(PERSONAL_DATA.values()),
        Detector.INJECTION: list(INJECTIONS.values()),
    }
    negatives = FALSE_POSITIVES + ORDINARY_PROSE
    rows = []
    for detector, find in FINDERS.items():
        found = sum(1 for text in positives[detector] if any(True for _ in find(Text(text))))
        alarms = sum(1 for text in negatives if any(True for _ in find(Text(text))))
        rows.append((detector.value, len(positives[detector]), found, len(negatives), alarms))
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.guardrails", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--doc", type=Path, default=DOC)
    args = parser.parse_args(argv)
    rng = random.Random(34)
    arguments, result, dense = arguments_4kb(rng), result_64kb(rng), _prose(rng, 65536)
    screened = _screened(rng, arguments, result, dense, args.runs)
    texts = {"4 KB arguments": json.dumps(arguments), "64 KB JSON": result, "64 KB prose": dense}
    alone = [
        (d.value, [_alone(find, t, args.runs) for t in texts.values()])
        for d, find in FINDERS.items()
    ]
    tables = _tables(screened, list(texts), alone, precision())
    text = (
        "# Guardrails benchmark\n\n"
        "Generated by `python -m bench.guardrails` (part of `make bench`); see docs/guardrails.md."
        f"\n\n{tables}"
    )
    args.output.write_text(text, encoding="utf-8")
    document = args.doc.read_text(encoding="utf-8")
    begin, end = document.index(_BEGIN), document.index(_END)
    note = "<!-- generated by python -m bench.guardrails: do not edit by hand -->\n"
    document = document[:begin] + f"{_BEGIN}\n{note}\n{tables}\n" + document[end:]
    args.doc.write_text(document, encoding="utf-8")
    print(text)


def _alone(find: Callable[[Text], Iterator[object]], text: str, runs: int) -> float:
    return timed(lambda: list(find(Text(text))), runs)[0]


def _screened(
    rng: random.Random, arguments: dict[str, object], result: str, dense: str, runs: int
) -> list[tuple[str, float, float]]:
    guardrails = Guardrails(GuardrailSettings())
    whole = Guardrails(GuardrailSettings(full_scan_chars=65536))
    prompts = PromptGuardrail(
        PromptGuard(PromptGuardrailSettings(keys=["bench"]), 65536), lambda _: None
    )
    principal = Principal(1, "bench", frozenset({"user"}))
    chat = ChatRequest(
        (
            SystemMessage("You are a support assistant for the shop. Answer briefly."),
            UserMessage(_prose(rng, 2000)),
        )
    )
    cases: list[tuple[str, Callable[[], object]]] = [
        ("chat request, prompt detection on (2 KB)", lambda: prompts.screen(principal, chat)),
        ("4 KB arguments", lambda: guardrails.screen_arguments(arguments, "s", "t")),
        ("64 KB result (JSON records)", lambda: guardrails.screen_result(result, "s", "t")),
        ("64 KB result (prose with numbers)", lambda: guardrails.screen_result(dense, "s", "t")),
        ("64 KB result (JSON records), whole", lambda: whole.screen_result(result, "s", "t")),
        ("64 KB result (prose with numbers), whole", lambda: whole.screen_result(dense, "s", "t")),
    ]
    rows = []
    for name, run in cases:
        run()  # compiled patterns and caches warm, as on a serving replica
        rows.append((name, *timed(run, runs)))
    return rows


def _tables(
    screened: list[tuple[str, float, float]],
    texts: list[str],
    alone: list[tuple[str, list[float]]],
    found: list[tuple[str, int, int, int, int]],
) -> str:
    lines = ["| screened (secure defaults) | p50 µs | p95 µs |", "| --- | ---: | ---: |"]
    lines += [f"| {name} | {p50:.0f} | {p95:.0f} |" for name, p50, p95 in screened]
    cost = {detector: p50s for detector, p50s in alone}
    lines += [
        "",
        "| detector | positives | found | negatives | false alarms | precision | recall | "
        + " | ".join(f"p50 µs, {t}" for t in texts)
        + " |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | "
        + " | ".join("---:" for _ in texts)
        + " |",
    ]
    for detector, positives, hits, negatives, alarms in found:
        share = hits / (hits + alarms) if hits + alarms else 1.0
        lines.append(
            f"| {detector} | {positives} | {hits} | {negatives} | {alarms} | {share:.2f} | "
            f"{hits / positives:.2f} | " + " | ".join(f"{p:.0f}" for p in cost[detector]) + " |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
