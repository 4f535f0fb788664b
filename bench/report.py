"""docs/benchmarks.md from one run's results."""

from __future__ import annotations

import os
import platform
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from bench.conversation import ConversationRow
from bench.conversation import table as conversation_table
from bench.goals import goals
from bench.load import WrkResult
from bench.waiting import WaitingRow
from bench.waiting import table as waiting_table


@dataclass(frozen=True)
class Row:
    target: str
    mode: str  # whole | stream
    connections: int
    result: WrkResult
    cpu_ms_per_request: float
    rss_mb: float
    load_average: float  # the machine's 1-minute load when the run ended: others share it


@dataclass
class TargetExtras:
    idle_rss_mb: float | None = None
    first_byte_p50_ms: float | None = None
    first_byte_p99_ms: float | None = None
    streams_open: int | None = None
    streams_rss_mb: float | None = None


@dataclass(frozen=True)
class MCPRow:
    """One client's tool calls to one MCP server (see ``bench/mcp.py``)."""

    transport: str  # stdio | streamable_http
    client: str  # direct (the SDK's ClientSession alone) | gateway (the gateway's MCP client)
    concurrency: int
    calls: int
    seconds: float  # wall time the calls took, summed over the interleaved blocks
    p50_ms: float
    p90_ms: float
    p99_ms: float
    cpu_ms_per_call: float  # the client process's CPU (the server's is not counted)
    errors: int
    load_average: float

    @property
    def calls_per_second(self) -> float:
        return self.calls / self.seconds if self.seconds else 0.0


@dataclass(frozen=True)
class TurnRow:
    """Conversation turns through the gateway's HTTP API (see ``bench/mcp_api.py``)."""

    tool: str  # "no tool" (the baseline) or the transport of the one MCP tool call
    turns: int
    p50_ms: float
    p90_ms: float
    p99_ms: float
    errors: int
    load_average: float
    database: str = "sqlite"
    # The gateway's process tree (the stdio tool server included) per turn; None: not measured.
    cpu_ms_per_turn: float | None = None


@dataclass
class Results:
    rows: list[Row] = field(default_factory=list)
    extras: dict[str, TargetExtras] = field(default_factory=dict)
    mcp: list[MCPRow] = field(default_factory=list)
    mcp_turns: list[TurnRow] = field(default_factory=list)
    conversation: list[ConversationRow] = field(default_factory=list)
    waiting: WaitingRow | None = None
    versions: dict[str, str] = field(default_factory=dict)
    settings: str = ""

    def row(self, target: str, mode: str, connections: int) -> Row | None:
        for row in self.rows:
            if (row.target, row.mode, row.connections) == (target, mode, connections):
                return row
        return None


def machine() -> str:
    model = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return (
        f"{model}, {os.cpu_count()} cores, {pages / 2**30:.0f} GiB RAM, "
        f"Linux {platform.release()}, Python {platform.python_version()}"
    )


def git_revision(root: Path) -> str:
    completed = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return completed.stdout.strip() or "unknown"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _added(row: Row, base: Row | None) -> str:
    if base is None or row.target == "upstream":
        return "-"
    r, b = row.result, base.result
    return f"{r.p50_ms - b.p50_ms:+.2f} / {r.p99_ms - b.p99_ms:+.2f}"


def _main_table(results: Results) -> list[str]:
    lines = [
        "| target | mode | conc. | req/s | p50 ms | p90 ms | p99 ms | added p50 / p99 ms "
        "| CPU ms/req | RSS MB | errors | load |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in results.rows:
        base = results.row("upstream", row.mode, row.connections)
        r = row.result
        lines.append(
            f"| {row.target} | {row.mode} | {row.connections} | {r.rps:,.0f} | {r.p50_ms:.2f} "
            f"| {r.p90_ms:.2f} | {r.p99_ms:.2f} | {_added(row, base)} "
            f"| {row.cpu_ms_per_request:.2f} | {row.rss_mb:.0f} | {r.errors} "
            f"| {row.load_average:.1f} |"
        )
    return lines


def _extras_table(results: Results) -> list[str]:
    base = results.extras.get("upstream", TargetExtras())
    lines = [
        "| target | idle RSS MB | first byte p50 / p99 ms | added first byte p50 ms "
        "| streams open together | RSS MB with them |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, extra in results.extras.items():
        added = (
            "-"
            if name == "upstream" or extra.first_byte_p50_ms is None
            else f"{extra.first_byte_p50_ms - (base.first_byte_p50_ms or 0):+.2f}"
        )
        lines.append(
            f"| {name} | {_ms(extra.idle_rss_mb)} | {_ms(extra.first_byte_p50_ms)} / "
            f"{_ms(extra.first_byte_p99_ms)} | {added} | {extra.streams_open or '-'} "
            f"| {_ms(extra.streams_rss_mb)} |"
        )
    return lines


def _mcp_added(row: MCPRow, rows: list[MCPRow]) -> str:
    if row.client == "direct":
        return "-"
    for base in rows:
        key = (base.transport, base.client, base.concurrency)
        if key == (row.transport, "direct", row.concurrency):
            return f"{row.p50_ms - base.p50_ms:+.2f} / {row.p99_ms - base.p99_ms:+.2f}"
    return "-"


def mcp_table(rows: list[MCPRow]) -> list[str]:
    """One line per transport, client and concurrency; ``added`` is the gateway's MCP client
    minus the SDK alone on the same server at the same concurrency."""
    lines = [
        "| transport | client | conc. | calls | calls/s | p50 ms | p90 ms | p99 ms "
        "| added p50 / p99 ms | client CPU ms/call | errors | load |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row.transport} | {row.client} | {row.concurrency} | {row.calls:,} "
            f"| {row.calls_per_second:,.0f} | {row.p50_ms:.2f} | {row.p90_ms:.2f} "
            f"| {row.p99_ms:.2f} | {_mcp_added(row, rows)} | {row.cpu_ms_per_call:.2f} "
            f"| {row.errors} | {row.load_average:.1f} |"
        )
    return lines


def turns_table(rows: list[TurnRow]) -> list[str]:
    """One line per database and kind of turn; ``added`` is the turn minus the turn with no
    tool on the same database."""
    lines = [
        "| database | turn | turns | p50 ms | p90 ms | p99 ms | added p50 / p99 ms "
        "| CPU ms/turn | errors | load |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        base = next((r for r in rows if (r.database, r.tool) == (row.database, "no tool")), None)
        added = (
            "-"
            if base is None or row is base
            else f"{row.p50_ms - base.p50_ms:+.2f} / {row.p99_ms - base.p99_ms:+.2f}"
        )
        tool = row.tool if row.tool == "no tool" else f"one tool call, {row.tool}"
        cpu = "-" if row.cpu_ms_per_turn is None else f"{row.cpu_ms_per_turn:.2f}"
        lines.append(
            f"| {row.database} | {tool} | {row.turns:,} | {row.p50_ms:.2f} | {row.p90_ms:.2f} "
            f"| {row.p99_ms:.2f} | {added} | {cpu} | {row.errors} | {row.load_average:.1f} |"
        )
    return lines


def _turns_part(results: Results) -> list[str]:
    if not results.mcp_turns:
        return []
    return [
        "Through the HTTP API: one conversation turn (`POST /v1/conversations/{id}/messages`) "
        "whose scripted model calls the tool once and then answers, against a turn whose model "
        "answers at once, on each database. `added` is the whole tool round: the call proposed, "
        "decided and run, each step persisted, and the second model call. CPU is the gateway's "
        "and the stdio tool server's it runs.",
        "",
        *turns_table(results.mcp_turns),
        "",
    ]


def _mcp_section(results: Results) -> list[str]:
    if not results.mcp and not results.mcp_turns:
        return []
    return [
        "## MCP tool round trip",
        "",
        "One tool call (`get_current_time` of PyPI's `mcp-server-time`) through the gateway's MCP "
        "client (`gateway`: `MCPToolCatalog.call_tool`, what the tool executor calls) against the "
        "MCP SDK's `ClientSession` alone (`direct`), on the same server. `added` is gateway minus "
        "direct at the same transport and concurrency; CPU is the calling process's only.",
        "",
        *mcp_table(results.mcp),
        "",
        *_turns_part(results),
    ]


def _conversation_section(results: Results) -> list[str]:
    if not results.conversation:
        return []
    return [
        "## Conversation turns",
        "",
        "`POST /v1/conversations/{id}/messages` with the `mock` model (`bench/conversation.py`), "
        "one at a time, on a conversation with one earlier turn and on one with hundreds. CPU "
        "is the gateway process's per request (not the database server's): on a shared machine "
        "it moves far less than the latencies.",
        "",
        *conversation_table(results.conversation),
        "",
    ]


def _waiting_section(results: Results) -> list[str]:
    if results.waiting is None:
        return []
    return [
        "## Conversations waiting for approval",
        "",
        "Conversations parked at a held tool call through the native API (`bench/waiting.py`), "
        "the gateway's RSS before and with all of them waiting, and the admin approval queue "
        "page (`GET /admin`, its first page) loaded one at a time.",
        "",
        *waiting_table(results.waiting),
        "",
    ]


def render(results: Results) -> str:
    date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    versions = ", ".join(f"{k} {v}" for k, v in results.versions.items())
    return "\n".join(
        [
            "# Benchmarks",
            "",
            "Written by `make bench` (`bench/run.py`); see the end of this page for the method.",
            "",
            f"- Date: {date}",
            f"- Machine: {machine()}",
            f"- Versions: {versions}",
            f"- Settings: {results.settings}",
            *machine_speed(results),
            "",
            "## Throughput and latency",
            "",
            "`added` is the target's latency minus the upstream's alone at the same concurrency "
            "and mode. CPU is the server's processes' CPU time divided by completed requests; "
            "RSS is theirs after the run. `load` is the machine's 1-minute load average as the run "
            "ended: above 2 on 2 cores, other work competed for the CPU and latencies suffer.",
            "",
            *_main_table(results),
            "",
            "## Memory and first streamed byte",
            "",
            "First byte: one streamed request at a time on a kept-alive connection, time from "
            "sending to the first body byte. Streams: that many streamed requests held open at "
            "once against an upstream that throttles after its first events.",
            "",
            *_extras_table(results),
            "",
            *_conversation_section(results),
            *_waiting_section(results),
            *_mcp_section(results),
        ]
    )


# The C programs' CPU per request in the run whose goals were set (2026-11-23, an Intel Xeon):
# the same nginx and wrk binaries doing the same work, so their ratio tells how fast this
# machine is against that one (the figures of issue 22 were taken there).
_REFERENCE_UPSTREAM_CPU_MS = 0.0226  # nginx, whole, concurrency 1
_REFERENCE_WRK_CPU_MS = 0.0191  # wrk against the gateway, whole, concurrency 64


def machine_speed(results: Results) -> list[str]:
    """How much slower (or faster) this machine runs fixed C work than the reference run."""
    parts = []
    upstream = results.row("upstream", "whole", 1)
    if upstream:
        factor = upstream.cpu_ms_per_request / _REFERENCE_UPSTREAM_CPU_MS
        parts.append(f"nginx {factor:.1f}x")
    gateway = results.row("gateway", "whole", 64)
    if gateway and gateway.result.requests:
        wrk = gateway.result.wrk_cpu_seconds * 1000 / gateway.result.requests
        parts.append(f"wrk {wrk / _REFERENCE_WRK_CPU_MS:.1f}x")
    if not parts:
        return []
    return [
        f"- Machine speed: CPU per request of the same C programs against the run the goals "
        f"were set on (2026-11-23, Intel Xeon): {', '.join(parts)} (above 1: this machine is "
        f"slower, and every CPU and latency figure here with it)"
    ]


METHOD = """## Method

- Upstream: nginx (Debian package, one worker) answers `POST .../chat/completions` from memory with
  `return 200 <canned body>`: a chat completion, a whole SSE stream (12 events and `[DONE]`), or
  for the open-streams test the same stream throttled to 25 bytes/s after its first 400 bytes.
  One nginx worker serves tens of thousands of these a second, so it is never the bottleneck
  (see the upstream rows), which a Python mock would be.
- Load: `wrk` (Debian package, one thread, keep-alive, `bench/wrk_post.lua` for the POST body and
  the p90) for requests/s and latency; its CPU per request is a small fraction of a core (the
  `upstream` rows show how far one wrk thread goes). A raw asyncio client for the first byte and
  the open streams (one request at a time, or mostly waiting: it is not the bottleneck there).
  On a busy 2-core machine the client itself may wait for a core while the server finishes the
  rest of a stream, which inflates the first-byte times; compare against the `load` column.
  Everything on 127.0.0.1; every run is bounded in time.
- Our gateway: `llm-gateway serve` (uvicorn, uvloop, httptools, one process) with SQLite, a real
  API key (auth), usage recorded to the database and one JSON log line a request (to a file),
  models `provider: openai` with `base_url` pointing at the mock.
- LiteLLM: `litellm[proxy]` in its own virtual environment, one worker, master key auth, no
  database, `num_retries: 0`, same models and mock.
- Each measured run follows a short warm-up at the same concurrency. The servers and wrk share
  the same 2 cores, as they would share a node: numbers at concurrency 64 are CPU-bound.
- MCP tool round trip (`bench/mcp.py`, also `python -m bench.mcp` alone): PyPI's `mcp-server-time`
  over stdio (each client starts its own child) and over streamable HTTP (the same package's
  server under uvicorn in its own process, `bench/mcp_server.py`). Per transport and concurrency
  (1, then 16 calls in flight), a warm-up, then 2,000 calls of `get_current_time` by each client:
  the SDK's `ClientSession.call_tool` and the gateway's `MCPToolCatalog.call_tool` (argument
  validation, per-server limit, raised to the concurrency so it never queues, timeout, result
  conversion). The two alternate in blocks of 25 calls per concurrent caller, so other work on the
  machine hits both alike; uvloop as under `llm-gateway serve`. Then through the HTTP API
  (`bench/mcp_api.py`): `llm-gateway serve` with both servers configured and scripted `mock`
  models, 300 turns of each kind, each on a new conversation made untimed beforehand, in
  alternating blocks, one at a time.
- Waiting for approval (`bench/waiting.py`, also `python -m bench.waiting` alone): `llm-gateway
  serve` with `mcp-server-time` over stdio, its tools requiring approval, and a scripted `mock`
  model calling one; 1,000 conversations each created and sent one message (32 at a time), each
  turn stopping at the held call. RSS is the gateway's before (after one warm-up turn) and with
  all 1,000 waiting; the queue page is loaded 10 times, one at a time, signed in with an `admin`
  key, after one untimed load.
"""


def document(results: Results) -> str:
    return "\n".join([render(results), "## Goals", "", *goals(results), "", METHOD])
