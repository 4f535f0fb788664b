"""The soak's invariants, as pure functions of what it recorded (``bench/soak.py`` runs it;
``tests/bench/test_soak_checks.py`` proves each check can fail)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Outcome:
    """One request of the soak's traffic: its status, or None when it got no HTTP answer."""

    kind: str
    started: float  # seconds since the soak began
    seconds: float
    status: int | None
    error: str | None = None
    request_id: str | None = None  # the gateway's, from x-request-id
    replica: str | None = None  # the one that answered


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    held: bool
    detail: str


def every_request_answered(outcomes: Sequence[Outcome], timeout: float) -> Check:
    """Every request got an answer (success or error) before its timeout: none hung."""
    hung = [o for o in outcomes if o.status is None and o.seconds >= timeout]
    unanswered = [o for o in outcomes if o.status is None]
    slowest = max((o.seconds for o in outcomes), default=0.0)
    statuses: dict[str, int] = {}
    for outcome in outcomes:
        key = str(outcome.status) if outcome.status is not None else (outcome.error or "none")
        statuses[key] = statuses.get(key, 0) + 1
    counts = ", ".join(f"{key}: {n}" for key, n in sorted(statuses.items()))
    return Check(
        "every request answered, none past its timeout",
        not hung,
        f"{len(outcomes)} requests ({counts}); {len(unanswered)} without an HTTP answer, "
        f"{len(hung)} hung past {timeout:g} s; slowest {slowest:.1f} s",
    )


def tool_calls_exactly_once(executions: int, succeeded: int, unknown: int) -> Check:
    """The tool server's own count of executions against the calls the gateway says ran: a
    call is run twice or lost when they differ. A call in ``unknown_outcome`` (its replica died
    while it ran) or ``timed_out`` (the server answered too late, or never) may or may not have
    run, and is counted as either."""
    # None at all proves nothing: the soak's tool calls did not run.
    held = 0 < succeeded <= executions <= succeeded + unknown
    return Check(
        "no tool call run twice or lost",
        held,
        f"{executions} executions on the tool server, {succeeded} calls succeeded, "
        f"{unknown} of unknown outcome or timed out",
    )


def usage_rows_present(rows: int, served: int, note: str = "") -> Check:
    """A usage row for every model request the callers saw served (200); ``note`` says which
    are missing, when some are."""
    return Check(
        "every usage row present",
        rows == served,
        f"{rows} usage rows with status 200 for {served} model requests answered 200"
        + ("" if rows == served else f" ({rows - served:+d})")
        + note,
    )


def flat_after_warmup(
    name: str, samples: Sequence[float], unit: str, tolerance: float, warmup: int | None = None
) -> Check:
    """The last sample within ``tolerance`` (a fraction) of the first after warm-up: the one at
    index ``warmup``, by default the first after the first third of the samples."""
    if warmup is None:
        warmup = len(samples) // 3
    if len(samples) < 3 or warmup > len(samples) - 2:
        return Check(f"{name} flat after warm-up", False, f"{len(samples)} samples: too few")
    warm = samples[warmup]
    last = samples[-1]
    grown = last / warm - 1 if warm else 0.0
    return Check(
        f"{name} flat after warm-up",
        grown <= tolerance,
        f"{warm:,.1f} {unit} after warm-up, {last:,.1f} at the end ({grown:+.1%}, "
        f"limit +{tolerance:.0%}; {len(samples)} samples, max {max(samples):,.1f})",
    )


def budget_held(spent: float, budget: float, reservation: float) -> Check:
    """Simultaneous requests overshoot a budget by at most one request's reserved cost."""
    return Check(
        "no budget overshoot beyond one reservation",
        spent <= budget + reservation,
        f"spent ${spent:.2f} of a ${budget:.2f} budget (one reservation ${reservation:.2f})",
    )


def recovered(name: str, seconds: float | None, limit: float) -> Check:
    return Check(
        f"recovery after {name}",
        seconds is not None and seconds <= limit,
        "never recovered" if seconds is None else f"{seconds:.1f} s (limit {limit:g} s)",
    )


def table(checks: Sequence[Check]) -> str:
    rows = "".join(
        f"| {check.name} | {'held' if check.held else '**FAILED**'} | {check.detail} |\n"
        for check in checks
    )
    return f"| invariant | result | measured |\n|---|---|---|\n{rows}"
