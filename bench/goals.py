"""The issue's goals, each with the number one run reached (the end of docs/benchmarks.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bench.conversation import ConversationRow
    from bench.report import Results
    from bench.waiting import WaitingRow

# name, the number reached (None: not measured this run), the bound, the unit ("x": at least).
Check = tuple[str, float | None, float, str]


def _ratio(results: Results, mode: str, connections: int) -> float | None:
    ours = results.row("gateway", mode, connections)
    theirs = results.row("litellm", mode, connections)
    if ours is None or theirs is None or not theirs.result.rps:
        return None
    return ours.result.rps / theirs.result.rps


def _cpu_ratio(results: Results, mode: str, connections: int) -> float | None:
    """LiteLLM's CPU per request over ours: the throughput ratio once both are CPU-bound on the
    same cores, and far less disturbed than req/s by other work sharing the machine."""
    ours = results.row("gateway", mode, connections)
    theirs = results.row("litellm", mode, connections)
    if ours is None or theirs is None or not ours.cpu_ms_per_request:
        return None
    return theirs.cpu_ms_per_request / ours.cpu_ms_per_request


def goals(results: Results) -> list[str]:
    """The issue's goals, each with the number reached; ``-`` where not measured this run."""
    whole1 = results.row("gateway", "whole", 1)
    base1 = results.row("upstream", "whole", 1)
    gw, up = results.extras.get("gateway"), results.extras.get("upstream")
    checks: list[Check] = []
    if whole1 and base1:
        ours, bare = whole1.result, base1.result
        checks.append(("added p50 at concurrency 1", ours.p50_ms - bare.p50_ms, 1.0, "ms"))
        checks.append(("added p99 at concurrency 1", ours.p99_ms - bare.p99_ms, 3.0, "ms"))
    for mode in ("whole", "stream"):
        ratio = _ratio(results, mode, 64)
        checks.append((f"throughput vs LiteLLM at 64, {mode}: req/s", ratio, 5.0, "x"))
        cpu_ratio = _cpu_ratio(results, mode, 64)
        checks.append((f"throughput vs LiteLLM at 64, {mode}: CPU/req", cpu_ratio, 5.0, "x"))
    if gw and up and gw.first_byte_p50_ms is not None and up.first_byte_p50_ms is not None:
        added = gw.first_byte_p50_ms - up.first_byte_p50_ms
        checks.append(("added first byte p50", added, 1.0, "ms"))
    for mode in ("whole", "stream"):
        single, several = results.row("gateway", mode, 64), results.row("gateway-workers", mode, 64)
        if single and several and single.result.rps:
            ratio = several.result.rps / single.result.rps
            checks.append((f"workers vs one process at 64, {mode}: req/s", ratio, 1.8, "x"))
    for mode, limit in (("whole", 0.22), ("stream", 0.32)):
        single = results.row("gateway", mode, 64)
        cpu = single.cpu_ms_per_request if single else None
        checks.append((f"CPU per request at 64, {mode}, one process", cpu, limit, "ms"))
    checks += _conversation_goals(results.conversation)
    checks += _tool_round_goal(results)
    checks += _waiting_goals(results.waiting)
    if gw:
        checks.append(("RSS with 1,000 streams open", gw.streams_rss_mb, 300.0, "MB"))
        checks.append(("idle RSS", gw.idle_rss_mb, 150.0, "MB"))
    lines = ["| goal | target | reached | met |", "|---|---:|---:|---|"]
    for name, value, limit, unit in checks:
        at_least = unit == "x"
        met = value is not None and (value >= limit if at_least else value < limit)
        shown = "-" if value is None else f"{value:.2f} {unit}"
        bound = f"{'>=' if at_least else '<'} {limit:g} {unit}"
        lines.append(f"| {name} | {bound} | {shown} | {'yes' if met else 'no'} |")
    return lines


def _tool_round_goal(results: Results) -> list[Check]:
    """A turn with one stdio tool call minus a turn without on the same database, minus the
    tool call's own time (the MCP SDK alone calling the same server, one at a time)."""
    alone = ("stdio", "direct", 1)
    direct = next((r for r in results.mcp if (r.transport, r.client, r.concurrency) == alone), None)
    checks: list[Check] = []
    for database in ("sqlite", "postgresql"):
        turns = {r.tool: r for r in results.mcp_turns if r.database == database}
        base, with_tool = turns.get("no tool"), turns.get("stdio")
        if base is None or with_tool is None or direct is None:
            continue
        added = with_tool.p50_ms - base.p50_ms - direct.p50_ms
        name = f"tool round p50 over the tool's own time, stdio, {database}"
        checks.append((name, added, 6.0, "ms"))
    return checks


_TURN_GOALS_MS = {"sqlite": 2.0, "postgresql": 3.0}


def _conversation_goals(rows: list[ConversationRow]) -> list[Check]:
    checks: list[Check] = []
    for database, limit in _TURN_GOALS_MS.items():
        short = next((r for r in rows if (r.database, r.kind) == (database, "short")), None)
        long = next((r for r in rows if (r.database, r.kind) == (database, "long")), None)
        if short is None or long is None:
            continue
        checks.append((f"conversation turn p50, {database}", short.p50_ms, limit, "ms"))
        growth = (long.p50_ms / short.p50_ms - 1) * 100 if short.p50_ms else None
        checks.append((f"turn at {long.history} turns vs 1, {database}", growth, 10.0, "%"))
    return checks


def _waiting_goals(row: WaitingRow | None) -> list[Check]:
    """Issue 22: 1,000 conversations waiting for approval (``bench/waiting.py``)."""
    if row is None:
        return []
    count = f"{row.conversations:,}"
    return [
        (f"RSS with {count} conversations waiting for approval", row.rss_waiting_mb, 250.0, "MB"),
        (f"approval queue page with {count} pending, p50", row.page_p50_ms, 200.0, "ms"),
    ]
