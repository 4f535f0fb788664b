"""The benchmark's pieces import and its arguments parse (it is run by `make bench`, not here)."""

from __future__ import annotations

import json

import pytest

from bench import load, run, stats, upstream
from bench.conversation import ConversationRow
from bench.report import MCPRow, Results, document, mcp_table
from bench.waiting import WaitingRow


def test_defaults_cover_the_issue_matrix() -> None:
    args = run.parse_args([])
    assert args.concurrency == [1, 16, 64]
    assert args.modes == ["whole", "stream"]
    assert args.targets == ["upstream", "gateway", "gateway-workers", "litellm"]
    assert args.streams == 1000
    assert args.mcp  # the MCP tool round trip is part of `make bench`
    assert args.conversation  # and the conversation turns by history length
    assert args.waiting  # and 1,000 conversations waiting for approval
    assert args.waiting_conversations == 1000
    with pytest.raises(SystemExit):
        run.parse_args(["--conversation-turns", "100000"])


def test_report_states_the_workers_and_conversation_goals() -> None:
    short = ConversationRow("sqlite", "short", 1, 100, 1.5, 2, 3, 0, 1.0, 0.5)
    long = ConversationRow("sqlite", "long", 400, 100, 1.6, 2, 3, 0, 1.0, 0.5)
    text = document(Results(conversation=[short, long]))
    assert "| conversation turn p50, sqlite | < 2 ms | 1.50 ms | yes |" in text
    assert "| turn at 400 turns vs 1, sqlite | < 10 % | 6.67 % | yes |" in text
    assert "## Conversation turns" in text


def test_report_states_the_waiting_goals() -> None:
    row = WaitingRow(1000, 1000, 180.0, 230.5, 40.0, 10, 120.0, 150.0, 30.0, 90.0, 1.5)
    text = document(Results(waiting=row))
    assert "## Conversations waiting for approval" in text
    assert "| 1,000 of 1,000 | 180 | 230 | 40.0 | 10 | 120.0 | 150.0 | 30.0 | 90 | 1.5 |" in text
    assert (
        "| RSS with 1,000 conversations waiting for approval | < 250 MB | 230.50 MB | yes |" in text
    )
    assert "| approval queue page with 1,000 pending, p50 | < 200 ms | 120.00 ms | yes |" in text


def test_the_waiting_section_appears_only_when_measured() -> None:
    text = document(Results())
    assert "## Conversations waiting for approval" not in text
    assert "waiting for approval |" not in text


def test_runs_are_bounded() -> None:
    with pytest.raises(SystemExit):
        run.parse_args(["--duration", "600"])
    with pytest.raises(SystemExit):
        run.parse_args(["--waiting-conversations", "100000"])


def test_load_goes_to_loopback_only() -> None:
    with pytest.raises(ValueError, match=r"127\.0\.0\.1"):
        load.run_wrk("http://example.com/v1/chat/completions", "k", "{}", 1, 1)


def test_canned_stream_is_valid_openai_sse() -> None:
    events = upstream.stream_body().split("\n\n")
    payloads = [e.removeprefix("data: ") for e in events if e]
    assert payloads[-1] == "[DONE]"
    chunks = [json.loads(p) for p in payloads[:-1]]
    assert chunks[-1]["usage"]["total_tokens"] == 21
    assert json.loads(upstream.completion_body())["object"] == "chat.completion"


def _mcp_row(client: str, p50: float, p99: float) -> MCPRow:
    return MCPRow("stdio", client, 1, 2000, 2.0, p50, p50 + 0.1, p99, 0.3, 0, 1.0)


def test_mcp_table_shows_the_gateway_clients_added_latency_over_the_sdk() -> None:
    rows = [_mcp_row("direct", 0.80, 1.50), _mcp_row("gateway", 1.05, 1.40)]
    lines = mcp_table(rows)
    assert lines[2] == (
        "| stdio | direct | 1 | 2,000 | 1,000 | 0.80 | 0.90 | 1.50 | - | 0.30 | 0 | 1.0 |"
    )
    assert "| +0.25 / -0.10 |" in lines[3]


def test_the_mcp_section_appears_only_when_measured() -> None:
    assert "## MCP tool round trip" not in document(Results())
    measured = document(Results(mcp=[_mcp_row("direct", 0.8, 1.5)]))
    assert "## MCP tool round trip" in measured
    assert "TODO" not in measured


def test_percentile_is_the_nearest_rank() -> None:
    times = [float(n) for n in range(1, 101)]
    assert stats.percentile(times, 0.50) == 50.0
    assert stats.percentile(times, 0.99) == 99.0
    assert stats.percentile([7.0], 0.99) == 7.0
