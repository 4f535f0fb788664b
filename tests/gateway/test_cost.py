"""Every usage record carries its cost in USD, priced from litellm's table or the config."""

from __future__ import annotations

import asyncio

import httpx
import openai
import pytest
from sqlalchemy import select

from db.engine import create_engine, session_factory
from db.usage_models import UsageRecord
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_ollama import FakeOllama
from tests.support.fake_openai import FakeOpenAI, FakeReply
from tests.support.gateway import running_gateway
from tests.support.servers import serve

# litellm's table (pinned with litellm in uv.lock), USD per token.
GPT_4O_MINI = {"input": 0.15e-6, "cached": 0.075e-6, "output": 0.6e-6}
CLAUDE_SONNET_4_5 = {"input": 3e-6, "cache_read": 0.3e-6, "cache_write": 3.75e-6, "output": 15e-6}


async def _rows(database_url: str) -> dict[str, UsageRecord]:
    engine = create_engine(database_url)
    try:
        async with session_factory(engine)() as session:
            rows = await session.scalars(select(UsageRecord).order_by(UsageRecord.id))
            return {row.model: row for row in rows}
    finally:
        await engine.dispose()


def _models(openai_url: str, anthropic_url: str, ollama_url: str) -> list[dict[str, object]]:
    def model(
        name: str, provider: str, upstream: str, url: str, price: object = None
    ) -> dict[str, object]:
        keyed = {"api_key_env": "UPSTREAM_KEY"} if provider != "ollama" else {}
        return {
            "name": name,
            "provider": provider,
            "model": upstream,
            "base_url": url,
            "price": price,
            **keyed,
        }

    priced = {"input_per_1k": 0.01, "output_per_1k": 0.03}
    return [
        model("gpt", "openai", "gpt-4o-mini", f"{openai_url}/v1"),
        model("claude", "anthropic", "claude-sonnet-4-5", anthropic_url),
        model("llama", "ollama", "llama3.2", ollama_url),
        model("llama-priced", "ollama", "llama3.2", ollama_url, price=priced),
        model("finetune", "openai", "acme-ft-7", f"{openai_url}/v1"),
    ]


def test_cost_of_openai_anthropic_and_ollama_replies(database_url: str) -> None:
    fake_openai, fake_anthropic, fake_ollama = FakeOpenAI(), FakeAnthropic(), FakeOllama()
    fake_openai.queue(
        FakeReply(text="hi", prompt_tokens=1000, cached_tokens=600, completion_tokens=300,
                  reasoning_tokens=120),
        FakeReply(text="tuned", prompt_tokens=50, completion_tokens=5),
    )  # fmt: skip
    fake_anthropic.queue(
        FakeReply(text="hi", prompt_tokens=2000, cached_tokens=1500, cache_write_tokens=400,
                  completion_tokens=100)
    )  # fmt: skip
    fake_ollama.queue(
        FakeReply(text="a", prompt_tokens=40, completion_tokens=10),
        FakeReply(text="b", prompt_tokens=40, completion_tokens=10),
    )
    with (
        serve(fake_openai.app()) as openai_url,
        serve(fake_anthropic.app()) as anthropic_url,
        serve(fake_ollama.app()) as ollama_url,
        running_gateway(
            database_url,
            environ={"UPSTREAM_KEY": "sk-upstream"},
            models=_models(openai_url, anthropic_url, ollama_url),
        ) as gateway,
    ):
        key = gateway.create_key("spender", ["user"])
        sdk = openai.OpenAI(base_url=gateway.v1, api_key=key, max_retries=0)
        for model in ("gpt", "claude", "llama", "llama-priced", "finetune"):
            sdk.chat.completions.create(model=model, messages=[{"role": "user", "content": "x"}])
        operator = {"authorization": f"Bearer {gateway.create_key('ops', ['admin'])}"}
        ready = httpx.get(f"{gateway.url}/readyz", headers=operator).json()

    rows = asyncio.run(_rows(database_url))

    gpt = rows["gpt"]
    assert (gpt.prompt_tokens, gpt.cached_tokens, gpt.completion_tokens) == (1000, 600, 300)
    assert gpt.reasoning_tokens == 120
    expected = (
        400 * GPT_4O_MINI["input"] + 600 * GPT_4O_MINI["cached"] + 300 * GPT_4O_MINI["output"]
    )
    assert gpt.cost_usd == pytest.approx(expected)

    claude = rows["claude"]
    assert (claude.prompt_tokens, claude.cached_tokens, claude.cache_write_tokens) == (
        2000,
        1500,
        400,
    )
    price = CLAUDE_SONNET_4_5
    expected = (
        100 * price["input"]
        + 1500 * price["cache_read"]
        + 400 * price["cache_write"]
        + 100 * price["output"]
    )
    assert claude.cost_usd == pytest.approx(expected)

    # A self-hosted model costs nothing per token unless the config prices it.
    assert (rows["llama"].prompt_tokens, rows["llama"].completion_tokens) == (40, 10)
    assert rows["llama"].cost_usd == 0
    assert rows["llama-priced"].cost_usd == pytest.approx(40 * 0.01e-3 + 10 * 0.03e-3)

    # A model nobody prices is recorded without a cost and flagged, not free.
    assert rows["finetune"].cost_usd is None
    assert ready["unpriced_models"] == ["finetune"]
    assert ready["models"]["finetune"]["priced"] is False
    assert ready["models"]["gpt"]["price"]["source"] == "litellm"
    assert ready["models"]["gpt"]["price"]["table_entry"] == "gpt-4o-mini"
    assert ready["models"]["llama-priced"]["price"]["source"] == "config"
    assert ready["models"]["llama"]["price"]["source"] == "self_hosted"


def test_streamed_replies_carry_cache_tokens_and_cost(database_url: str) -> None:
    fake_anthropic = FakeAnthropic()
    fake_anthropic.queue(
        FakeReply(text="streamed", prompt_tokens=500, cached_tokens=300, completion_tokens=20)
    )
    with (
        serve(fake_anthropic.app()) as anthropic_url,
        running_gateway(
            database_url,
            environ={"UPSTREAM_KEY": "sk-upstream"},
            models=_models("http://127.0.0.1:9", anthropic_url, "http://127.0.0.1:9")[1:2],
        ) as gateway,
    ):
        key = gateway.create_key("streamer", ["user"])
        sdk = openai.OpenAI(base_url=gateway.v1, api_key=key, max_retries=0)
        list(
            sdk.chat.completions.create(
                model="claude", messages=[{"role": "user", "content": "x"}], stream=True
            )
        )

    row = asyncio.run(_rows(database_url))["claude"]
    price = CLAUDE_SONNET_4_5
    assert (row.prompt_tokens, row.cached_tokens, row.completion_tokens) == (500, 300, 20)
    expected = 200 * price["input"] + 300 * price["cache_read"] + 20 * price["output"]
    assert row.cost_usd == pytest.approx(expected)
