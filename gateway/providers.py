"""The app's wiring to the adapters: which adapter serves each provider, and how each provider's
adapter converts a tool. The one module of ours above ``adapters`` that imports it
(tests/test_layering.py): ``llm_service`` builds its registry from these factories without
knowing any adapter.

Adapters are imported only when a model uses them (LiteLLM alone is tens of megabytes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from adapters.naming import wire_tool_name
from adapters.schemas import anthropic_input_schema, ollama_parameters, openai_parameters
from llm_service.config import ModelConfig
from llm_service.registry import AdapterFactory
from llm_service.types import ChatAdapter

ToolSchemaConverter = Callable[[dict[str, Any]], dict[str, Any]]


def _openai(config: ModelConfig, api_key: str | None) -> ChatAdapter:
    if config.native_responses:
        # Also serves the server's own Responses API (passed through, not translated).
        from adapters.openai_responses import OpenAIResponsesAdapter

        return OpenAIResponsesAdapter(config, api_key)
    from adapters.openai import OpenAIAdapter

    return OpenAIAdapter(config, api_key)


def _mock(config: ModelConfig, api_key: str | None) -> ChatAdapter:
    from adapters.mock import MockAdapter

    return MockAdapter(config)


def _anthropic(config: ModelConfig, api_key: str | None) -> ChatAdapter:
    from adapters.anthropic import AnthropicAdapter

    return AnthropicAdapter(config, api_key)


def _ollama(config: ModelConfig, api_key: str | None) -> ChatAdapter:
    from adapters.ollama import OllamaAdapter

    return OllamaAdapter(config, api_key)


def _litellm(config: ModelConfig, api_key: str | None) -> ChatAdapter:
    from adapters.litellm import LiteLLMAdapter

    return LiteLLMAdapter(config, api_key)


def _with_tool_format(build: AdapterFactory) -> AdapterFactory:
    """``build``, then for a raw-text model (``tool_format`` other than ``native``) the wrapper
    that does tool calling through its prompt."""

    def factory(config: ModelConfig, api_key: str | None) -> ChatAdapter:
        adapter = build(config, api_key)
        if config.tool_format == "native":
            return adapter
        from adapters.text.adapter import with_text_tools

        return with_text_tools(config, adapter, api_key)

    return factory


ADAPTER_FACTORIES: dict[str, AdapterFactory] = {
    provider: _with_tool_format(build)
    for provider, build in {
        "openai": _openai,
        "mock": _mock,
        "anthropic": _anthropic,
        "ollama": _ollama,
        "litellm": _litellm,
    }.items()
}

# The tool-parameter conversion each provider's adapter applies on the wire (``mock`` sends
# nothing anywhere); the schema compatibility report runs the same ones.
TOOL_SCHEMA_CONVERTERS: dict[str, ToolSchemaConverter] = {
    "openai": openai_parameters,
    "litellm": openai_parameters,
    "anthropic": anthropic_input_schema,
    "ollama": ollama_parameters,
}


def tool_name_on_wire(name: str) -> str:
    """The name every adapter sends for a tool whose canonical name is ``name``."""
    return wire_tool_name(name)
