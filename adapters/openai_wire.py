"""What the gateway reads from OpenAI Chat Completions replies, validated in one pass.

Only these few fields are read, validated by pydantic-core straight from the bytes of a whole
reply or of one stream event. The SDK's response models, built field by field in Python, were a
fifth of a streamed request's CPU (docs/performance.md).
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


class WirePromptDetails(_Wire):
    cached_tokens: int | None = None


class WireCompletionDetails(_Wire):
    reasoning_tokens: int | None = None


class WireUsage(_Wire):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    prompt_tokens_details: WirePromptDetails | None = None
    completion_tokens_details: WireCompletionDetails | None = None


class WireError(_Wire):
    message: str | None = None


class WireReply(_Wire):
    """A whole ``chat.completion``, one ``chat.completion.chunk``, or an error event."""

    model: str | None = None
    choices: list[WireChoice] = []
    usage: WireUsage | None = None
    # A server that fails mid-stream sends ``{"error": {...}}`` as an event's data.
    error: WireError | str | None = None

    @property
    def error_message(self) -> str | None:
        """The error event's message; None when this is not an error event."""
        if not self.error:
            return None
        if isinstance(self.error, str):
            return self.error
        return self.error.message or "an error occurred during streaming"


class WireEmbedding(_Wire):
    index: int
    embedding: list[float]


class WireEmbeddingUsage(_Wire):
    prompt_tokens: int | None = None


class WireEmbeddings(_Wire):
    """A ``POST /embeddings`` reply (asked for as floats)."""

    model: str | None = None
    data: list[WireEmbedding]
    usage: WireEmbeddingUsage | None = None
