"""``POST /v1/embeddings`` through the official openai SDK, over OpenAI-compatible, Ollama and
LiteLLM embedding models (wire-faithful fakes), with the chat APIs' keys, roles, router, usage.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import openai
import pytest
from pydantic import ValidationError
from sqlalchemy import select

from db.engine import create_engine, session_factory
from db.usage_models import UsageRecord
from llm_service.config import ModelConfig
from tests.support.fake_ollama import FakeOllama
from tests.support.fake_openai import FakeOpenAI, FakeReply, fake_vector
from tests.support.gateway import RunningGateway, running_gateway
from tests.support.servers import serve
from tests.support.waiting import eventually


@dataclass
class EmbeddingStack:
    gateway: RunningGateway
    openai_fake: FakeOpenAI
    ollama_fake: FakeOllama
    key: str

    def client(self, key: str | None = None) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.gateway.v1, api_key=key or self.key, max_retries=0)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddingStack]:
    openai_fake, ollama_fake = FakeOpenAI(), FakeOllama(models=["nomic-embed-text:latest"])
    down = FakeOpenAI(outage=FakeReply(status=500))
    database_url = f"sqlite+aiosqlite:///{Path(tmp_path_factory.mktemp('db')) / 'gateway.db'}"
    embedding = {"kind": "embedding", "api_key_env": "UPSTREAM_KEY"}
    with (
        serve(openai_fake.app()) as openai_url,
        serve(down.app()) as down_url,
        serve(ollama_fake.app()) as ollama_url,
        running_gateway(
            database_url,
            environ={"UPSTREAM_KEY": "sk-upstream"},
            models=[
                {
                    **embedding,
                    "name": "embed-openai",
                    "provider": "openai",
                    "model": "text-embedding-3-small",
                    "base_url": f"{openai_url}/v1",
                },
                {
                    "name": "embed-ollama",
                    "kind": "embedding",
                    "provider": "ollama",
                    "model": "nomic-embed-text",
                    "base_url": ollama_url,
                },
                {
                    **embedding,
                    "name": "embed-litellm",
                    "provider": "litellm",
                    "model": "openai/text-embedding-3-large",
                    "base_url": f"{openai_url}/v1",
                },
                {
                    **embedding,
                    "name": "embed-down",
                    "provider": "openai",
                    "base_url": f"{down_url}/v1",
                    "retry": {"max_attempts": 1},
                    "fallbacks": ["embed-ollama"],
                },
                {**embedding, "name": "embed-analysts", "provider": "openai", "roles": ["analyst"]},
                {"name": "chat", "provider": "mock"},
            ],
        ) as gateway,
    ):
        yield EmbeddingStack(gateway, openai_fake, ollama_fake, gateway.create_key("rag", ["user"]))


def test_openai_list_input_as_floats_and_as_base64(stack: EmbeddingStack) -> None:
    client = stack.client()
    texts = ["first text", "second one here"]

    as_floats = client.embeddings.create(
        model="embed-openai", input=texts, dimensions=4, encoding_format="float"
    )
    # Without encoding_format the SDK asks for base64 and decodes it itself.
    as_base64 = client.embeddings.create(model="embed-openai", input=texts, dimensions=4)

    for reply in (as_floats, as_base64):
        assert reply.model == "embed-openai"
        assert [d.index for d in reply.data] == [0, 1]
        assert [d.embedding for d in reply.data] == [fake_vector(t, 4) for t in texts]
        assert (reply.usage.prompt_tokens, reply.usage.total_tokens) == (5, 5)
    sent = stack.openai_fake.requests[-1]
    assert sent["model"] == "text-embedding-3-small"
    assert (sent["input"], sent["dimensions"], sent["encoding_format"]) == (texts, 4, "float")
    assert stack.openai_fake.headers[-1]["authorization"] == "Bearer sk-upstream"


def test_ollama_string_input(stack: EmbeddingStack) -> None:
    reply = stack.client().embeddings.create(
        model="embed-ollama", input="one string", encoding_format="float"
    )

    assert [d.embedding for d in reply.data] == [fake_vector("one string")]
    assert reply.usage.prompt_tokens == 2
    assert stack.ollama_fake.requests[-1] == {"model": "nomic-embed-text", "input": ["one string"]}


def test_litellm_embeddings(stack: EmbeddingStack) -> None:
    reply = stack.client().embeddings.create(
        model="embed-litellm", input=["via litellm"], dimensions=3
    )

    assert [d.embedding for d in reply.data] == [fake_vector("via litellm", 3)]
    assert stack.openai_fake.requests[-1]["model"] == "text-embedding-3-large"


def test_a_failing_model_falls_back(stack: EmbeddingStack) -> None:
    raw = stack.client().embeddings.with_raw_response.create(
        model="embed-down", input=["rescued"], encoding_format="float"
    )

    assert raw.headers["x-gateway-model"] == "embed-ollama"
    assert [d.embedding for d in raw.parse().data] == [fake_vector("rescued")]


def test_chat_and_embedding_models_stay_on_their_own_routes(stack: EmbeddingStack) -> None:
    client = stack.client()
    with pytest.raises(openai.BadRequestError) as refused:
        client.embeddings.create(model="chat", input="hi")
    assert "chat model" in refused.value.message
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(
            model="embed-openai", messages=[{"role": "user", "content": "hi"}]
        )
    assert "embedding model" in refused.value.message
    with pytest.raises(openai.BadRequestError):
        client.responses.create(model="embed-openai", input="hi")


def test_keys_roles_and_bad_input(stack: EmbeddingStack) -> None:
    with pytest.raises(openai.PermissionDeniedError):
        stack.client().embeddings.create(model="embed-analysts", input="hi")
    with pytest.raises(openai.AuthenticationError):
        stack.client("gw-wrong").embeddings.create(model="embed-openai", input="hi")
    with pytest.raises(openai.BadRequestError):
        stack.client().embeddings.create(model="embed-openai", input=[])
    with pytest.raises(openai.BadRequestError):
        stack.client().embeddings.create(model="embed-openai", input=[[1, 2, 3]])


def test_usage_is_recorded(stack: EmbeddingStack) -> None:
    stack.client().embeddings.create(model="embed-openai", input="count these four words")

    async def rows() -> list[UsageRecord]:
        engine = create_engine(stack.gateway.database_url)
        try:
            async with session_factory(engine)() as session:
                query = select(UsageRecord).where(UsageRecord.route == "/v1/embeddings")
                return list(await session.scalars(query.where(UsageRecord.prompt_tokens == 4)))
        finally:
            await engine.dispose()

    recorded: list[UsageRecord] = []

    def found() -> bool:
        recorded[:] = asyncio.run(rows())
        return bool(recorded)

    eventually(found, "the usage row")
    assert [(r.model, r.provider, r.status_code) for r in recorded] == [
        ("embed-openai", "openai", 200)
    ]


def test_only_providers_that_embed_may_be_embedding_models() -> None:
    with pytest.raises(ValidationError, match="kind: embedding"):
        ModelConfig.model_validate({"name": "e", "provider": "anthropic", "kind": "embedding"})
    assert ModelConfig.model_validate({"name": "c", "provider": "mock"}).kind == "chat"
