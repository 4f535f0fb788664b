"""Model registry configuration: what operators write under ``models:``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Provider = Literal["openai", "anthropic", "ollama", "litellm", "mock"]
ToolFormat = Literal[
    "native", "auto", "hermes", "llama3", "pythonic", "mistral", "granite", "deepseek", "generic"
]


class Timeouts(BaseModel):
    model_config = ConfigDict(extra="forbid")

    connect: float = Field(5.0, gt=0, description="seconds to open a connection")
    read: float = Field(120.0, gt=0, description="seconds to wait for any byte of the answer")
    total: float = Field(600.0, gt=0, description="seconds for the whole call")


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
    model: str | None = Field(None, description="the upstream model id; defaults to `name`")
    base_url: str | None = None
    api_key_env: str | None = Field(None, description="environment variable holding the key")
    tool_format: ToolFormat = "native"
    server_tools: bool = False
    roles: list[str] = Field(
        default_factory=list, description="key roles allowed to use this model; empty: every key"
    )
    max_tokens: int | None = Field(None, gt=0, description="default max_tokens for this model")
    timeouts: Timeouts = Field(default_factory=Timeouts)
    script: list[MockStep] = Field(
        default_factory=list, description="provider mock only: the scripted turns"
    )

    @property
    def upstream_model(self) -> str:
        return self.model or self.name

    @model_validator(mode="after")
    def _script_only_for_mock(self) -> ModelConfig:
        if self.script and self.provider != "mock":
            raise ValueError("`script` is only valid for provider `mock`")
        return self
