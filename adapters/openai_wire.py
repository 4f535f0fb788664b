"""What the gateway reads from OpenAI Chat Completions replies, validated in one pass.

The SDK still sends the request, maps HTTP errors and decodes the SSE stream; only its response
models are skipped. It builds those field by field in Python, which was a fifth of a streamed
request's CPU (docs/performance.md); these few fields are validated by pydantic-core instead,
straight from the body's bytes for whole replies.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class _Wire(BaseModel):
    # Servers add fields of their own; only these are read.
    model_config = ConfigDict(extra="ignore", frozen=True)


class WireFunction(_Wire):
    name: str | None = None
    arguments: str | None = None


class WireToolCall(_Wire):
    index: int | None = None
    id: str | None = None
    type: str | None = None
    function: WireFunction | None = None


class WireMessage(_Wire):
    """A whole reply's ``message`` or a chunk's ``delta``."""

    content: str | None = None
    tool_calls: list[WireToolCall] | None = None
    # vLLM, llama.cpp and others send reasoning in one of these non-standard fields.
    reasoning_content: str | None = None
    reasoning: str | None = None

    @property
    def thinking(self) -> str | None:
        return self.reasoning_content or self.reasoning


class WireChoice(_Wire):
    message: WireMessage | None = None
    delta: WireMessage | None = None
    finish_reason: str | None = None


class WireUsage(_Wire):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class WireReply(_Wire):
    """A whole ``chat.completion`` or one ``chat.completion.chunk``."""

    model: str | None = None
    choices: list[WireChoice] = []
    usage: WireUsage | None = None
