"""Metrics agree with usage_records for the same traffic; logs say what the caller was told."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import select
from structlog.testing import capture_logs

from db.engine import create_engine, session_factory
from db.usage_models import UsageRecord
from tests.chat_service.test_tool_loop import decide, follow, pending_call, start
from tests.support.tool_loop import loop_stack_on


async def _usage_rows(database_url: str) -> list[UsageRecord]:
    engine = create_engine(database_url)
    try:
        async with session_factory(engine)() as session:
            return list(await session.scalars(select(UsageRecord)))
    finally:
        await engine.dispose()


def _samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _traffic(stack: Any) -> None:
    """A conversation paused for approval and resumed, plain and streamed completions, and an
    Anthropic-shaped message: every path that records usage."""
    conversation_id, turn = start(stack, "loop")
    assert decide(stack, pending_call(turn)["record_id"], "approve").status_code == 200
    follow(stack, conversation_id)
    sdk = openai.OpenAI(base_url=stack.gateway.v1, api_key=stack.user_key, max_retries=0)
    hello: list[openai.types.chat.ChatCompletionMessageParam] = [
        {"role": "user", "content": "hello there, how are you today?"}
    ]
    sdk.chat.completions.create(model="loop-server", messages=hello)
    for _ in sdk.chat.completions.create(
        model="time-server", messages=hello, stream=True, stream_options={"include_usage": True}
    ):
        pass
    claude = anthropic.Anthropic(base_url=stack.gateway.url, api_key=stack.user_key)
    claude.messages.create(
        model="loop", max_tokens=20, messages=[{"role": "user", "content": "hi"}]
    )


def test_token_metrics_agree_with_usage_records_for_the_same_traffic(
    database_url: str, tmp_path: Path
) -> None:
    with loop_stack_on(database_url) as stack:
        _traffic(stack)
        text = httpx.get(f"{stack.gateway.url}/metrics").text
    rows = asyncio.run(_usage_rows(database_url))  # flushed at shutdown

    metrics: Counter[tuple[str, str, str]] = Counter()
    for (name, labels), value in _samples(text).items():
        if name == "llm_gateway_tokens_total":
            label = dict(labels)
            metrics[(label["model"], label["provider"], label["kind"])] += int(value)
    usage: Counter[tuple[str, str, str]] = Counter()
    for row in rows:
        usage[(row.model, row.provider or "", "prompt")] += row.prompt_tokens
        usage[(row.model, row.provider or "", "completion")] += row.completion_tokens

    assert {route for row in rows for route in [row.route]} >= {"conversation"}
    assert usage[("loop", "mock", "prompt")] > 0  # the conversation's model calls count
    assert +metrics == +usage


def test_latency_starts_at_a_millisecond_streams_time_their_first_token_and_no_created(
    database_url: str,
) -> None:
    with loop_stack_on(database_url) as stack:
        _traffic(stack)
        text = httpx.get(f"{stack.gateway.url}/metrics").text

    families = {family.name: family for family in text_string_to_metric_families(text)}
    buckets = sorted(
        float(sample.labels["le"])
        for sample in families["llm_gateway_request_duration_seconds"].samples
        if sample.name.endswith("_bucket")
    )
    assert buckets[0] == 0.001
    first_token = families["llm_gateway_time_to_first_token_seconds"]
    streamed = {
        (s.labels["route"], s.labels["model"])
        for s in first_token.samples
        if s.name.endswith("_count") and s.value > 0
    }
    assert ("/v1/chat/completions", "time-server") in streamed
    assert ("/v1/chat/completions", "loop-server") not in streamed  # not streamed
    assert "_created" not in text
    assert {"llm_gateway_webhook_deliveries", "llm_gateway_tool_calls"} <= set(families)


def test_logs_name_the_callers_error_type_warn_on_errors_and_follow_tool_calls(
    database_url: str,
) -> None:
    # capture_logs swaps the processors in place, so loggers cached elsewhere report here too;
    # configuring a log file instead would leave cached loggers writing to it after the test.
    with loop_stack_on(database_url) as stack, capture_logs() as lines:
        url = stack.gateway.url
        refused = httpx.post(
            f"{url}/v1/messages",
            headers={"x-api-key": "gw-wrong"},
            json={"model": "loop", "max_tokens": 5, "messages": []},
        )
        assert refused.json()["error"]["type"] == "authentication_error"
        openai_refused = httpx.post(
            f"{stack.gateway.v1}/chat/completions",
            headers={"authorization": "Bearer gw-wrong"},
            json={"model": "loop", "messages": []},
        )
        assert openai_refused.json()["error"]["type"] == "invalid_request_error"
        conversation_id, turn = start(stack, "loop")
        assert decide(stack, pending_call(turn)["record_id"], "reject", "no").status_code == 200
        follow(stack, conversation_id)

    requests = [line for line in lines if line["event"] == "request" and line["status"] == 401]
    by_path = {line["path"]: line for line in requests}
    assert by_path["/v1/messages"]["error_type"] == "authentication_error"
    assert by_path["/v1/chat/completions"]["error_type"] == "invalid_request_error"
    assert all(line["log_level"] == "warning" for line in requests)
    ok = [line for line in lines if line["event"] == "request" and line["status"] < 400]
    assert ok
    assert all(line["log_level"] == "info" for line in ok)

    mine = [line for line in lines if line.get("conversation_id") == conversation_id]
    events = [(line["event"], line["tool"], line["state"]) for line in mine]
    assert ("tool_call", "get_time", "approved") in events  # by policy, no approval needed
    assert ("tool_call", "get_time", "succeeded") in events
    assert ("approval_requested", "transfer_money", "awaiting_approval") in events
    assert ("approval_decided", "transfer_money", "rejected") in events
    decided = next(line for line in mine if line["event"] == "approval_decided")
    assert decided["decision"] == "rejected"
    assert decided["decided_by_key_id"] is not None
    assert all("arguments" not in line for line in mine)
