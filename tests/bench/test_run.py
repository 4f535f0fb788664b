"""The benchmark's pieces import and its arguments parse (it is run by `make bench`, not here)."""

from __future__ import annotations

import json

import pytest

from bench import load, run, upstream


def test_defaults_cover_the_issue_matrix() -> None:
    args = run.parse_args([])
    assert args.concurrency == [1, 16, 64]
    assert args.modes == ["whole", "stream"]
    assert args.targets == ["upstream", "gateway", "litellm"]
    assert args.streams == 1000


def test_runs_are_bounded() -> None:
    with pytest.raises(SystemExit):
        run.parse_args(["--duration", "600"])


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
