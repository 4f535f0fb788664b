"""Which adapter serves which provider. Adapters are imported only when a model uses them."""

from __future__ import annotations

from llm_service.adapter import ChatAdapter
from llm_service.config import ModelConfig
from llm_service.registry import AdapterFactory


def _openai(config: ModelConfig, api_key: str | None) -> ChatAdapter:
    from adapters.openai import OpenAIAdapter

    return OpenAIAdapter(config, api_key)


def _mock(config: ModelConfig, api_key: str | None) -> ChatAdapter:
    from adapters.mock import MockAdapter

    return MockAdapter(config, api_key)


def _anthropic(config: ModelConfig, api_key: str | None) -> ChatAdapter:
    from adapters.anthropic import AnthropicAdapter

    return AnthropicAdapter(config, api_key)


def _ollama(config: ModelConfig, api_key: str | None) -> ChatAdapter:
    from adapters.ollama import OllamaAdapter

    return OllamaAdapter(config, api_key)


def _litellm(config: ModelConfig, api_key: str | None) -> ChatAdapter:
    from adapters.litellm import LiteLLMAdapter

    return LiteLLMAdapter(config, api_key)


ADAPTER_FACTORIES: dict[str, AdapterFactory] = {
    "openai": _openai,
    "mock": _mock,
    "anthropic": _anthropic,
    "ollama": _ollama,
    "litellm": _litellm,
}
