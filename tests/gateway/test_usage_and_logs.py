"""Every request's usage is stored; the log line never carries a key."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import openai
import pytest
import structlog
from sqlalchemy import select

from db.engine import create_engine, session_factory
from db.usage_models import UsageRecord
from gateway.logging import configure_logging
from tests.support.fake_openai import FakeOpenAI
from tests.support.gateway import running_gateway
from tests.support.servers import serve


async def _usage_rows(database_url: str) -> list[UsageRecord]:
    engine = create_engine(database_url)
    try:
        async with session_factory(engine)() as session:
            return list(await session.scalars(select(UsageRecord).order_by(UsageRecord.id)))
    finally:
        await engine.dispose()


def test_usage_is_recorded_and_flushed_on_shutdown(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with running_gateway(database_url, models=[{"name": "mock", "provider": "mock"}]) as gateway:
        key = gateway.create_key("billing-test", ["user"])
        sdk = openai.OpenAI(base_url=gateway.v1, api_key=key, max_retries=0)
        sdk.chat.completions.create(model="mock", messages=[{"role": "user", "content": "one"}])
        list(
            sdk.chat.completions.create(
                model="mock", messages=[{"role": "user", "content": "two"}], stream=True
            )
        )
        with pytest.raises(openai.NotFoundError):
            sdk.chat.completions.create(model="absent", messages=[{"role": "user", "content": "x"}])

    rows = asyncio.run(_usage_rows(database_url))

    assert [(r.model, r.status_code) for r in rows] == [
        ("mock", 200),
        ("mock", 200),
        ("absent", 404),
    ]
    assert all(r.key_name == "billing-test" for r in rows)
    assert rows[0].prompt_tokens > 0
    assert rows[0].completion_tokens > 0
    assert rows[1].completion_tokens > 0  # streamed usage is recorded too
    assert rows[2].error_type == "invalid_request_error"
    assert key not in capsys.readouterr().out


def test_one_json_log_line_per_request_without_secrets(sqlite_url: str, tmp_path: Path) -> None:
    # A file of the test's own, not capsys: loggers cached during the test keep writing to it
    # after the test, and a file that stays open takes that harmlessly.
    log_file = (tmp_path / "gateway.log").open("w")
    configure_logging("info", log_file)
    fake = FakeOpenAI()
    models = [
        {"name": "mock", "provider": "mock"},
        {"name": "upstream", "provider": "openai", "base_url": None, "api_key_env": "UP_KEY"},
    ]
    try:
        with serve(fake.app()) as upstream_url:
            models[1]["base_url"] = f"{upstream_url}/v1"
            with running_gateway(sqlite_url, {"UP_KEY": "sk-upstream"}, models=models) as gateway:
                key = gateway.create_key("logger", ["user"])
                sdk = openai.OpenAI(base_url=gateway.v1, api_key=key, max_retries=0)
                for model in ("mock", "upstream"):
                    sdk.chat.completions.create(
                        model=model, messages=[{"role": "user", "content": "hi"}]
                    )
    finally:
        structlog.reset_defaults()

    # Every line is JSON: no library may slip a plain-text line in (httpx narrates each
    # upstream request at INFO unless told not to).
    log_file.flush()
    output = (tmp_path / "gateway.log").read_text()
    lines = [json.loads(line) for line in output.splitlines() if line.strip()]
    requests = [line for line in lines if line.get("event") == "request"]
    assert [entry["model"] for entry in requests] == ["mock", "upstream"]
    entry = requests[0]
    assert entry["key"] == "logger"
    assert entry["provider"] == "mock"
    assert entry["status"] == 200
    assert entry["prompt_tokens"] > 0
    assert entry["request_id"]
    assert requests[1]["provider"] == "openai"
    assert all(
        key not in json.dumps(line) and "sk-upstream" not in json.dumps(line) for line in lines
    )
