"""Canonical chat types: the one vocabulary every adapter translates to and from, and the small
surface every adapter implements (``ChatAdapter``).

Everything is an immutable dataclass so a conversation can be handed to any provider, replayed,
or persisted without defensive copies.

Each member of a union (messages, content parts) carries a constant field that names its kind
(``role``, ``type``), defaulted so code constructs them as before: serialized, a message says
what it is, and one pydantic ``TypeAdapter`` reads it back losslessly (chat_service.messages).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

# A JSON object as it comes off the wire or goes onto it, before (or after) it takes a type.
JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class CacheControl:
    """A prompt-cache breakpoint (Anthropic's ``cache_control``): the prompt up to and including
    the part that carries it may be cached. Only Anthropic models act on it (docs/providers.md);
    OpenAI and Ollama cache prefixes on their own."""

    type: Literal["ephemeral"] = "ephemeral"
    ttl: Literal["5m", "1h"] | None = None


@dataclass(frozen=True, slots=True)
class TextPart:
    text: str
    type: Literal["text"] = "text"
    cache_control: CacheControl | None = None


@dataclass(frozen=True, slots=True)
class ImagePart:
    url: str  # http(s) URL or a data: URL
    detail: str | None = None
    type: Literal["image"] = "image"
    cache_control: CacheControl | None = None


ContentPart = TextPart | ImagePart


@dataclass(frozen=True, slots=True)
class SystemMessage:
    content: str
    role: Literal["system"] = "system"
    cache_control: CacheControl | None = None


@dataclass(frozen=True, slots=True)
class UserMessage:
    content: str | tuple[ContentPart, ...]
    role: Literal["user"] = "user"


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    # Set only when the model produced arguments that are not a JSON object; the original text
    # is kept so a caller that executes tools itself sees exactly what the model wrote.
    raw_arguments: str | None = None
    cache_control: CacheControl | None = None


@dataclass(frozen=True, slots=True)
class Thinking:
    """A reasoning block; carried through history because some providers require it back."""

    text: str
    signature: str | None = None
    redacted: bool = False
    # The model that signed it: a signature is only good for that model (docs/providers.md).
    model: str | None = None


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    thinking: tuple[Thinking, ...] = ()
    role: Literal["assistant"] = "assistant"
    cache_control: CacheControl | None = None  # on its text


@dataclass(frozen=True, slots=True)
class ToolResultMessage:
    """A tool's answer. ``content`` is text, or parts in order (text and images, as Anthropic
    and the Responses API carry them); ``is_error`` says the tool failed. Providers without a
    place for either get them another way (docs/providers.md, "Tool results")."""

    tool_call_id: str
    content: str | tuple[ContentPart, ...]
    name: str | None = None
    is_error: bool = False
    role: Literal["tool"] = "tool"
    cache_control: CacheControl | None = None

    @property
    def text(self) -> str:
        """The result's text parts, joined: all a text-only channel can carry."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(p.text for p in self.content if isinstance(p, TextPart))

    @property
    def images(self) -> tuple[ImagePart, ...]:
        if isinstance(self.content, str):
            return ()
        return tuple(p for p in self.content if isinstance(p, ImagePart))


Message = SystemMessage | UserMessage | AssistantMessage | ToolResultMessage


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as offered to a model: the standardized form every adapter converts from."""

    name: str
    description: str
    parameters: dict[str, Any]
    cache_control: CacheControl | None = None


@dataclass(frozen=True, slots=True)
class NamedToolChoice:
    name: str


ToolChoice = Literal["auto", "none", "required"] | NamedToolChoice


ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]


@dataclass(frozen=True, slots=True)
class Reasoning:
    """Ask the model to reason before answering (OpenAI ``reasoning_effort``, Anthropic
    ``thinking``, Ollama ``think``). Each adapter maps what it has; docs/providers.md has the
    table. Neither field set: the model decides how much (Anthropic's adaptive thinking)."""

    effort: ReasoningEffort | None = None
    budget_tokens: int | None = None  # Anthropic's budget, when the caller gave one


@dataclass(frozen=True, slots=True)
class ResponseFormat:
    """The shape of the answer: OpenAI's ``response_format``.

    ``json_schema`` carries the schema (and its name and ``strict``); ``json_object`` asks for
    any JSON object; ``text`` is the default and is never sent.
    """

    type: Literal["text", "json_object", "json_schema"]
    schema: dict[str, Any] | None = None
    name: str | None = None
    strict: bool | None = None
    description: str | None = None


@dataclass(frozen=True, slots=True)
class SamplingParams:
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] = ()
    seed: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    response_format: ResponseFormat | None = None
    user: str | None = None
    reasoning: Reasoning | None = None
    # OpenAI's prompt-cache routing hint: requests sharing a key land on the same cache.
    prompt_cache_key: str | None = None


@dataclass(frozen=True, slots=True)
class ChatRequest:
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    params: SamplingParams = field(default_factory=SamplingParams)
    # Anthropic's top-level ``cache_control``: cache the prompt up to its last cacheable part.
    cache_control: CacheControl | None = None


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts; the breakdown fields are parts of the totals, zero where not reported."""

    prompt_tokens: int = 0  # every input token, cached ones included (OpenAI's convention)
    completion_tokens: int = 0  # every output token, reasoning ones included
    cached_tokens: int = 0  # of prompt_tokens: read from the provider's prompt cache
    cache_write_tokens: int = 0  # of prompt_tokens: written to it (Anthropic's cache creation)
    reasoning_tokens: int = 0  # of completion_tokens: hidden reasoning (OpenAI o-series)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


FinishReason = Literal["stop", "length", "tool_calls", "content_filter"]


@dataclass(frozen=True, slots=True)
class ChatResponse:
    message: AssistantMessage
    finish_reason: FinishReason
    usage: Usage
    model: str  # the upstream model that answered
    # Which of the request's stop sequences ended the answer, when the provider says so
    # (Anthropic does; OpenAI-style APIs only report ``stop``).
    stop_sequence: str | None = None


# Stream events. A stream is any number of deltas followed by exactly one StreamDone that
# carries the assembled response, so consumers never re-assemble deltas themselves.


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    text: str
    # The block's signature (Anthropic), sent once after its text: an API that hands thinking
    # back to its callers (/v1/messages) must pass it on, or the next tool round is refused.
    signature: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A piece of the tool call at ``index``; ``id`` and ``name`` arrive with its first piece."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(frozen=True, slots=True)
class StreamDone:
    response: ChatResponse


StreamEvent = TextDelta | ThinkingDelta | ToolCallDelta | StreamDone


class ChatAdapter(Protocol):
    """One configured deployment of one provider API.

    ``stream`` yields deltas and ends with exactly one ``StreamDone``. The provider's failures
    (its SDK's or wire's error types) are mapped at this boundary to ``llm_service.errors``
    subclasses of ``UpstreamError``; any other exception is a bug of ours, which the router
    reports as ``InternalError`` and never counts against the deployment.
    """

    provider: str

    async def complete(self, request: ChatRequest) -> ChatResponse: ...

    def stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]: ...

    async def probe(self) -> str | None:
        """Return why the deployment cannot serve (server unreachable, ...), or None if it can."""
        ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class EmbeddingRequest:
    inputs: tuple[str, ...]
    dimensions: int | None = None  # shorter vectors, where the model supports it
    user: str | None = None


@dataclass(frozen=True, slots=True)
class EmbeddingResponse:
    vectors: tuple[tuple[float, ...], ...]  # one per input, in the inputs' order
    usage: Usage  # prompt tokens only
    model: str  # the upstream model that answered


@runtime_checkable
class EmbeddingAdapter(Protocol):
    """A deployment that can also embed text (a model with ``kind: embedding``).

    Failures are mapped as ``ChatAdapter``'s are.
    """

    provider: str

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResponse: ...


# A provider's own Responses API (OpenAI's), passed through rather than translated, so what the
# canonical types do not hold survives: reasoning items with their encrypted content, summaries.
# The bodies are the Responses API's own JSON, which the gateway does not re-shape.


@dataclass(frozen=True, slots=True)
class ResponsesCall:
    """A Responses API request body without ``model``, ``stream``, ``store`` and
    ``previous_response_id``: the adapter sets the first two, the gateway keeps the history."""

    body: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ResponsesAnswer:
    response: dict[str, Any]  # the provider's Response object
    usage: Usage
    model: str  # the upstream model that answered


@dataclass(frozen=True, slots=True)
class ResponsesEvent:
    """One streamed event as the provider sent it (``type``, ``sequence_number``, ...)."""

    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ResponsesDone:
    """The stream's last event (``response.completed`` or ``response.incomplete``), read."""

    data: dict[str, Any]
    answer: ResponsesAnswer


ResponsesStreamEvent = ResponsesEvent | ResponsesDone


@runtime_checkable
class ResponsesAdapter(Protocol):
    """A deployment whose provider serves the Responses API itself. Failures (an ``error`` or
    ``response.failed`` event too) are mapped as ``ChatAdapter``'s are; a stream ends with
    exactly one ``ResponsesDone``."""

    provider: str

    async def respond(self, call: ResponsesCall) -> ResponsesAnswer: ...

    def respond_stream(self, call: ResponsesCall) -> AsyncGenerator[ResponsesStreamEvent, None]: ...
