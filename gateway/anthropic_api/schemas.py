"""The Anthropic Messages API request as the gateway accepts it.

Unknown fields (``citations``, ``service_tier``, ...) are ignored so newer SDKs keep working;
known ones are validated, ``cache_control`` and ``thinking`` included (they are carried to the
model: docs/providers.md). Block types the gateway cannot carry to
every provider (documents, server tools) are refused with a 400 naming the field.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class CacheControlIn(_Model):
    type: Literal["ephemeral"]
    ttl: Literal["5m", "1h"] | None = None


class _Cacheable(_Model):
    cache_control: CacheControlIn | None = None


class TextBlock(_Cacheable):
    type: Literal["text"]
    text: str


class Base64ImageSource(_Model):
    type: Literal["base64"]
    media_type: Literal["image/jpeg", "image/png", "image/gif", "image/webp"]
    data: str = Field(min_length=1)


class URLImageSource(_Model):
    type: Literal["url"]
    url: str = Field(min_length=1)


class ImageBlock(_Cacheable):
    type: Literal["image"]
    source: Annotated[Base64ImageSource | URLImageSource, Field(discriminator="type")]


class ToolUseBlock(_Cacheable):
    type: Literal["tool_use"]
    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    input: dict[str, Any]


ToolResultContent = Annotated[TextBlock | ImageBlock, Field(discriminator="type")]


class ToolResultBlock(_Cacheable):
    type: Literal["tool_result"]
    tool_use_id: str = Field(min_length=1)
    content: str | list[ToolResultContent] | None = None
    is_error: bool | None = None


class ThinkingBlock(_Model):
    type: Literal["thinking"]
    thinking: str
    signature: str | None = None


class RedactedThinkingBlock(_Model):
    type: Literal["redacted_thinking"]
    data: str


UserBlock = Annotated[TextBlock | ImageBlock | ToolResultBlock, Field(discriminator="type")]
AssistantBlock = Annotated[
    TextBlock | ToolUseBlock | ThinkingBlock | RedactedThinkingBlock, Field(discriminator="type")
]


class UserMessageIn(_Model):
    role: Literal["user"]
    content: str | list[UserBlock]


class AssistantMessageIn(_Model):
    role: Literal["assistant"]
    content: str | list[AssistantBlock]


class SystemMessageIn(_Model):
    """A system message inside ``messages``: Anthropic's mid-conversation system messages, which
    Claude Code sends (instructions that change during a session, after the first turn)."""

    role: Literal["system"]
    content: str | list[TextBlock]


MessageIn = Annotated[
    UserMessageIn | AssistantMessageIn | SystemMessageIn, Field(discriminator="role")
]


class ToolIn(_Cacheable):
    # Server tools (web_search, bash, ...) carry another ``type`` and are refused.
    type: Literal["custom"] | None = None
    name: str = Field(min_length=1, max_length=128)
    description: str | None = None
    input_schema: dict[str, Any]
    # Loaded only once the model searches for it (Anthropic's tool search): not offered up front.
    defer_loading: bool | None = None


class ToolChoiceAuto(_Model):
    type: Literal["auto"]
    disable_parallel_tool_use: bool | None = None


class ToolChoiceAny(_Model):
    type: Literal["any"]
    disable_parallel_tool_use: bool | None = None


class ToolChoiceTool(_Model):
    type: Literal["tool"]
    name: str = Field(min_length=1)
    disable_parallel_tool_use: bool | None = None


class ToolChoiceNone(_Model):
    type: Literal["none"]


ToolChoiceIn = Annotated[
    ToolChoiceAuto | ToolChoiceAny | ToolChoiceTool | ToolChoiceNone, Field(discriminator="type")
]


class ThinkingEnabled(_Model):
    type: Literal["enabled"]
    budget_tokens: int = Field(ge=1024)


class ThinkingAdaptive(_Model):
    type: Literal["adaptive"]


class ThinkingDisabled(_Model):
    type: Literal["disabled"]


ThinkingIn = Annotated[
    ThinkingEnabled | ThinkingAdaptive | ThinkingDisabled, Field(discriminator="type")
]


class OutputConfig(_Model):
    """``output_config``: how much effort the model spends (``format`` is not carried yet)."""

    effort: Literal["low", "medium", "high", "xhigh", "max"] | None = None


class Metadata(_Model):
    user_id: str | None = None


class CountTokensRequest(_Model):
    """``POST /v1/messages/count_tokens``: a message request without its output settings."""

    model: str = Field(min_length=1)
    messages: list[MessageIn] = Field(min_length=1)
    system: str | list[TextBlock] | None = None
    tools: list[ToolIn] | None = None
    tool_choice: ToolChoiceIn | None = None
    thinking: ThinkingIn | None = None


class MessagesRequest(CountTokensRequest):
    max_tokens: int = Field(ge=1)
    stop_sequences: list[str] | None = None
    temperature: float | None = Field(None, ge=0, le=1)
    top_p: float | None = Field(None, ge=0, le=1)
    # Accepted for compatibility; the canonical request has no top-k, so it is not forwarded.
    top_k: int | None = Field(None, ge=0)
    metadata: Metadata | None = None
    stream: bool = False
    output_config: OutputConfig | None = None
    # Automatic caching: a breakpoint on the last cacheable block.
    cache_control: CacheControlIn | None = None
