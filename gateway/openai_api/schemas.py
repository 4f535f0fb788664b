"""The OpenAI Chat Completions request as the gateway accepts it.

Unknown top-level fields are ignored so newer SDKs keep working; known ones are validated.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class TextContent(_Model):
    type: Literal["text"]
    text: str


class ImageURL(_Model):
    url: str = Field(min_length=1)
    detail: Literal["auto", "low", "high"] | None = None


class ImageContent(_Model):
    type: Literal["image_url"]
    image_url: ImageURL


UserContentPart = Annotated[TextContent | ImageContent, Field(discriminator="type")]


class FunctionCall(_Model):
    name: str = Field(min_length=1)
    arguments: str = ""


class ToolCallIn(_Model):
    id: str = Field(min_length=1)
    type: Literal["function"] = "function"
    function: FunctionCall


class SystemMessageIn(_Model):
    role: Literal["system", "developer"]
    content: str | list[TextContent]
    name: str | None = None


class UserMessageIn(_Model):
    role: Literal["user"]
    content: str | list[UserContentPart]
    name: str | None = None


class AssistantMessageIn(_Model):
    role: Literal["assistant"]
    content: str | list[TextContent] | None = None
    tool_calls: list[ToolCallIn] | None = None
    name: str | None = None


class ToolMessageIn(_Model):
    role: Literal["tool"]
    # Image parts are read only to be refused with a clear error, as OpenAI refuses them.
    content: str | list[UserContentPart]
    tool_call_id: str = Field(min_length=1)


MessageIn = Annotated[
    SystemMessageIn | UserMessageIn | AssistantMessageIn | ToolMessageIn,
    Field(discriminator="role"),
]


class FunctionDefinition(_Model):
    name: str = Field(min_length=1, max_length=256)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ToolIn(_Model):
    type: Literal["function"]
    function: FunctionDefinition


class NamedFunction(_Model):
    name: str = Field(min_length=1)


class NamedToolChoiceIn(_Model):
    type: Literal["function"]
    function: NamedFunction


class JsonSchemaIn(_Model):
    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
    # ``schema`` would shadow BaseModel.schema
    schema_: dict[str, Any] | None = Field(None, alias="schema")
    strict: bool | None = None
    description: str | None = None


class ResponseFormatText(_Model):
    type: Literal["text"]


class ResponseFormatJsonObject(_Model):
    type: Literal["json_object"]


class ResponseFormatJsonSchema(_Model):
    type: Literal["json_schema"]
    json_schema: JsonSchemaIn


ResponseFormatIn = Annotated[
    ResponseFormatText | ResponseFormatJsonObject | ResponseFormatJsonSchema,
    Field(discriminator="type"),
]


class StreamOptions(_Model):
    include_usage: bool = False


class ChatCompletionRequest(_Model):
    model: str = Field(min_length=1)
    messages: list[MessageIn] = Field(min_length=1)
    tools: list[ToolIn] | None = None
    tool_choice: Literal["auto", "none", "required"] | NamedToolChoiceIn | None = None
    parallel_tool_calls: bool | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, ge=0, le=1)
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    stop: str | list[str] | None = None
    seed: int | None = None
    presence_penalty: float | None = Field(None, ge=-2, le=2)
    frequency_penalty: float | None = Field(None, ge=-2, le=2)
    response_format: ResponseFormatIn | None = None
    user: str | None = None
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high", "xhigh"] | None = None
    prompt_cache_key: str | None = Field(None, min_length=1, max_length=1024)
    n: int | None = Field(None, ge=1, le=1, description="only one choice is supported")
