"""The soak's results: what the database holds at the end, the invariants checked against what
the soak recorded, and the table for docs/reliability.md (``bench/soak.py`` runs it)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import asyncpg

from bench import soak_checks as checks
from bench.soak_checks import Outcome
from bench.soak_setup import (
    BUDGET,
    KINDS,
    MODEL_ROUTES,
    PRICE,
    RECOVERY_LIMIT,
    TIMEOUT,
    TURN_TIMEOUT,
)

if TYPE_CHECKING:
    from bench.soak import Soak

BEGIN, END = "<!-- soak results -->", "<!-- end of soak results -->"


async def database_counts(database_url: str, workdir: Path) -> dict[str, int]:
    dsn = database_url.replace("postgresql+asyncpg", "postgresql")
    connection = await asyncpg.connect(dsn)
    try:
        routes = sorted(set(MODEL_ROUTES.values()))
        rows = await connection.fetch(
            "SELECT request_id FROM usage_records WHERE status_code = 200 AND route = ANY($1) "
            "AND api_key_id = (SELECT id FROM api_keys WHERE name = 'soak')",
            routes,
        )
        (workdir / "usage_request_ids.json").write_text(json.dumps([r[0] for r in rows]))
        interrupted = await connection.fetchval(
            "SELECT count(*) FROM conversation_events "
            "WHERE type = 'error' AND data->>'code' = 'turn_interrupted'"
        )
        states = dict(
            await connection.fetch(
                "SELECT state, count(*) FROM tool_calls WHERE tool_name = 'record' GROUP BY state"
            )
        )
        odd = await connection.fetch(
            "SELECT id, state, left(result, 300) AS result, started_at, finished_at "
            "FROM tool_calls WHERE tool_name = 'record' AND state <> 'succeeded' "
            "ORDER BY created_at"
        )
        (workdir / "record_calls_not_succeeded.json").write_text(
            json.dumps([dict(row) for row in odd], default=str, indent=1)
        )
        unfinished = await connection.fetchval(
            "SELECT count(*) FROM conversations WHERE status <> 'idle'"
        )
    finally:
        await connection.close()
    return {
        "usage": len(rows),
        "unfinished": unfinished,
        "interrupted": interrupted,
        **{str(k): int(v) for k, v in states.items()},
    }


def _usage_note(soak: Soak, usage_ids: set[str]) -> str:
    """Which requests lack a usage row (or which rows lack a request), and whether each was
    answered by replica 2 in the seconds before its kill -9: the recorder writes in batches
    (``usage_flush_seconds``, 1 s), and the batch a killed process held is written from the
    usage spool when it restarts; a row missing from just before a kill means that failed."""
    served = {
        o.request_id: o
        for o in soak.outcomes
        if o.kind in MODEL_ROUTES and o.status == 200 and o.request_id
    }
    missing = [served[rid] for rid in served.keys() - usage_ids]
    extra = len(usage_ids - served.keys())
    if not missing and not extra:
        return ""

    def before_a_kill(outcome: Outcome) -> bool:
        end = outcome.started + outcome.seconds
        return outcome.replica == "replica-2" and any(0 <= k - end <= 3 for k in soak.kills)

    killed = sum(1 for outcome in missing if before_a_kill(outcome))
    return (
        f"; {len(missing)} answered without a row ({killed} of them answered by replica 2 in "
        f"the 3 s before its kill -9), {extra} rows for no answered request"
    )


def evaluate(
    soak: Soak, counts: dict[str, int], usage_ids: set[str], executions: int
) -> list[checks.Check]:
    served = sum(1 for o in soak.outcomes if o.kind in MODEL_ROUTES and o.status == 200)
    warm = None  # without faults, the first third of the samples
    if soak.warmed_at is not None:
        warm = next((n for n, t in enumerate(soak.sampled_at) if t >= soak.warmed_at), None)
    results = [
        checks.every_request_answered(soak.outcomes, TIMEOUT),
        checks.tool_calls_exactly_once(
            executions,
            counts.get("succeeded", 0),
            counts.get("unknown_outcome", 0) + counts.get("timed_out", 0),
        ),
        checks.usage_rows_present(counts["usage"], served, _usage_note(soak, usage_ids)),
        checks.budget_held(soak.budget_spent, BUDGET, PRICE),
        checks.flat_after_warmup("RSS (replica 1)", soak.rss, "MB", 0.10, warm),
        checks.flat_after_warmup("/metrics size", soak.metrics_kb, "KiB", 0.10, warm),
        checks.Check(
            "every conversation's turn finished",
            counts["unfinished"] == 0,
            f"{len(soak.conversations)} conversations, {counts['unfinished']} not idle at the end; "
            f"{counts['interrupted']} ended by the sweeper at the turn timeout "
            f"({TURN_TIMEOUT} s)",
        ),
    ]
    results += [checks.recovered(name, s, RECOVERY_LIMIT) for name, s in soak.recoveries.items()]
    return results


def report(args: argparse.Namespace, soak: Soak, results: list[checks.Check]) -> str:
    kinds = ", ".join(KINDS)
    faults = "every fault below" if args.faults else "no faults"
    return (
        f"{BEGIN}\n"
        f"Run of `python -m bench.soak --minutes {args.minutes:g} --rate {args.rate:g}` "
        f"({time.strftime('%Y-%m-%d')}; the default is 10 minutes): {len(soak.outcomes)} "
        f"requests ({kinds}), two replicas on PostgreSQL and Redis, {faults}.\n\n"
        f"{checks.table(results)}{END}"
    )
