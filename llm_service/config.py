"""Model registry configuration: what operators write under ``models:``."""

from __future__ import annotations

import re
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, model_validator

Provider = Literal["openai", "anthropic", "ollama", "litellm", "mock"]
ModelKind = Literal["chat", "embedding"]
EMBEDDING_PROVIDERS = frozenset({"openai", "ollama", "litellm"})
# An opening reasoning tag: <think>, [THINK].
REASONING_TAG = re.compile(r"<[A-Za-z_][\w\-]*>|\[[A-Z_]+\]")
ToolFormat = Literal[
    "native", "auto", "hermes", "llama3", "pythonic", "mistral", "granite", "deepseek", "generic"
]


class Timeouts(BaseModel):
    model_config = ConfigDict(extra="forbid")

    connect: float = Field(5.0, gt=0, description="seconds to open a connection")
    read: float = Field(120.0, gt=0, description="seconds to wait for any byte of the answer")
    total: float = Field(
        600.0, gt=0, description="seconds for the whole call, retries and fallbacks included"
    )
    first_byte: float = Field(60.0, gt=0, description="seconds until a stream's first event")
    between_chunks: float = Field(30.0, gt=0, description="seconds between two stream events")


class Retry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_attempts: int = Field(3, ge=1, le=3, description="attempts per alias, the first included")
    backoff_base: float = Field(0.5, ge=0, description="seconds before the second attempt")
    backoff_max: float = Field(
        4.0, ge=0, description="longest wait; a longer Retry-After is not waited for"
    )


class CircuitBreakerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    failure_threshold: int = Field(3, ge=1, description="consecutive failures that open it")
    cooldown_seconds: float = Field(30.0, gt=0, description="out of rotation before a probe")


class Price(BaseModel):
    """What one thousand tokens cost, in US dollars; overrides litellm's price table."""

    model_config = ConfigDict(extra="forbid")

    input_per_1k: float = Field(0.0, ge=0)
    output_per_1k: float = Field(0.0, ge=0)
    cached_input_per_1k: float | None = Field(
        None, ge=0, description="prompt-cache reads; default: the input price"
    )
    cache_write_per_1k: float | None = Field(
        None, ge=0, description="prompt-cache writes (Anthropic); default: the input price"
    )
    per_request: float = Field(0.0, ge=0, description="a flat price per request")


class DeploymentConfig(BaseModel):
    """One of several upstreams behind an alias (two regions, two keys, ...)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, description="names the deployment in headers and logs")
    provider: Provider | None = Field(None, description="default: the alias's provider")
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    weight: float = Field(1.0, gt=0)


class MockToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class MockError(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: int = Field(500, ge=400, le=599)
    message: str = "scripted error"


class MockStep(BaseModel):
    """One scripted model turn: text, tool calls, or an error."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = None
    tool_calls: list[MockToolCall] = Field(default_factory=list)
    error: MockError | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> MockStep:
        if self.error is not None and (self.text is not None or self.tool_calls):
            raise ValueError("a step is either an error or an answer, not both")
        if self.error is None and self.text is None and not self.tool_calls:
            raise ValueError("a step needs text, tool_calls or error")
        return self


class ModelConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, description="what callers send as `model`")
    provider: Provider
    kind: ModelKind = Field(
        "chat", description="`embedding`: served on /v1/embeddings, and only there"
    )
    model: str | None = Field(None, description="the upstream model id; defaults to `name`")
    base_url: str | None = None
    api_key_env: str | None = Field(None, description="environment variable holding the key")
    tool_format: ToolFormat = "native"
    reasoning: bool | str | None = Field(
        None,
        description="text tool formats: the chat template opens a reasoning block in the prompt "
        "(QwQ, Qwen3, DeepSeek-R1, Magistral), so the reply is reasoning up to the closing tag; "
        "`true` for the format's own tag, or the opening tag (`<think>`, `[THINK]`); `false`: "
        "never; unset: detected from the served chat template where `tool_format: auto` can",
    )
    server_tools: bool = False
    forward_elicitation: bool = Field(
        False,
        description="a tool server's request for input during a call reaches the conversation's"
        " caller (`tool_call.input_required`) instead of being declined",
    )
    responses_api: Literal["auto", "native", "translate"] = Field(
        "auto",
        description="/v1/responses for provider openai: `native` passes it through to the "
        "server's own /responses (reasoning items survive), `translate` goes through Chat "
        "Completions; `auto`: native for OpenAI itself (no base_url, or api.openai.com)",
    )
    roles: list[str] = Field(
        default_factory=list, description="key roles allowed to use this model; empty: every key"
    )
    max_tokens: int | None = Field(None, gt=0, description="default max_tokens for this model")
    timeouts: Timeouts = Field(default_factory=Timeouts)
    script: list[MockStep] = Field(
        default_factory=list, description="provider mock only: the scripted turns"
    )
    fallbacks: list[str] = Field(
        default_factory=list, description="aliases tried in order when this one fails"
    )
    context_window_fallbacks: list[str] = Field(
        default_factory=list, description="aliases tried when the prompt is too long for this one"
    )
    deployments: list[DeploymentConfig] = Field(
        default_factory=list, description="several upstreams behind this alias, load balanced"
    )
    retry: Retry = Field(default_factory=Retry)
    circuit_breaker: CircuitBreakerConfig = Field(default_factory=CircuitBreakerConfig)
    price: Price | None = Field(
        None, description="USD per 1k tokens; default: litellm's price table"
    )

    @property
    def upstream_model(self) -> str:
        return self.model or self.name

    @property
    def native_responses(self) -> bool:
        """Whether this (provider openai) deployment is sent Responses API requests as they are."""
        if self.provider != "openai" or self.responses_api == "translate":
            return False
        if self.responses_api == "native":
            return True
        return self.base_url is None or urlsplit(self.base_url).hostname == "api.openai.com"

    @model_validator(mode="after")
    def _reasoning_for_text_formats(self) -> ModelConfig:
        if self.reasoning is not None and self.tool_format == "native":
            raise ValueError(
                "`reasoning` applies to text tool formats; with `tool_format: native` turn on the "
                "server's own reasoning parser"
            )
        if isinstance(self.reasoning, str) and not REASONING_TAG.fullmatch(self.reasoning):
            raise ValueError("`reasoning` must be true, false or an opening tag like <think>")
        return self

    @model_validator(mode="after")
    def _script_only_for_mock(self) -> ModelConfig:
        if self.script and self.provider != "mock":
            raise ValueError("`script` is only valid for provider `mock`")
        return self

    @model_validator(mode="after")
    def _embeddings_from_providers_that_embed(self) -> ModelConfig:
        providers = {self.provider, *(d.provider for d in self.deployments if d.provider)}
        if self.kind == "embedding" and not providers <= EMBEDDING_PROVIDERS:
            raise ValueError(
                "`kind: embedding` needs provider openai, ollama or litellm (for every deployment)"
            )
        return self

    @model_validator(mode="after")
    def _unique_deployment_ids(self) -> ModelConfig:
        ids = [d.id for d in self.deployments]
        if len(ids) != len(set(ids)):
            raise ValueError("deployment ids must be unique within a model")
        return self

    def deployment_configs(self) -> list[tuple[str, float, ModelConfig]]:
        """(id, weight, config) of each upstream; one, named after the alias, without a list."""
        if not self.deployments:
            return [(self.name, 1.0, self)]
        members = []
        for deployment in self.deployments:
            overrides = deployment.model_dump(
                include={"provider", "model", "base_url", "api_key_env"}, exclude_none=True
            )
            config = self.model_copy(update={**overrides, "deployments": []})
            members.append((deployment.id, deployment.weight, config))
        return members
