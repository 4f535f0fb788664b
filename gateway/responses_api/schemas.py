"""The OpenAI Responses API request as the gateway accepts it.

Known fields are validated; unknown ones are kept (``model_extra``) and passed to a provider that
serves the Responses API itself (``passthrough.py``), and ignored when translating, so newer SDKs
keep working. Input items and tools are read loosely (``type`` decides) so an item or tool the
gateway does not translate gets a 400 naming it (``convert.py``), not a wall of union errors.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow")


class TextFormat(_Model):
    """``text.format``: plain text, any JSON object, or JSON that holds to a schema."""

    type: Literal["text", "json_object", "json_schema"]
    name: str | None = Field(None, min_length=1, max_length=64)
    json_schema: dict[str, Any] | None = Field(None, alias="schema")
    description: str | None = None
    strict: bool | None = None

    @model_validator(mode="after")
    def _schema_needs_name_and_schema(self) -> TextFormat:
        if self.type == "json_schema" and (self.name is None or self.json_schema is None):
            raise ValueError("a `json_schema` format needs `name` and `schema`")
        return self


class TextConfig(_Model):
    format: TextFormat | None = None


class ReasoningConfig(_Model):
    """``reasoning``: its ``effort`` reaches a translated model as its reasoning option
    (``summary`` and the rest are for OpenAI's own models, which get the field as sent)."""

    effort: Literal["none", "minimal", "low", "medium", "high", "xhigh"] | None = None


class FunctionToolChoice(_Model):
    type: Literal["function"]
    name: str = Field(min_length=1)


class ResponsesRequest(_Model):
    model: str = Field(min_length=1)
    input: str | list[dict[str, Any]] = Field(min_length=1)
    instructions: str | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: Literal["auto", "none", "required"] | FunctionToolChoice | None = None
    parallel_tool_calls: bool | None = None
    max_output_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, ge=0, le=1)
    metadata: dict[str, str] | None = Field(None, max_length=16)
    store: bool = True
    previous_response_id: str | None = Field(None, min_length=1, max_length=64)
    stream: bool = False
    user: str | None = None
    text: TextConfig | None = None
    include: list[str] | None = None
    reasoning: ReasoningConfig | None = None

    def echoed(self, field: str) -> Any:
        """A field as the caller sent it, for the Response object's echo."""
        value = getattr(self, field)
        if isinstance(value, BaseModel):
            return value.model_dump(mode="json", by_alias=True, exclude_none=True)
        return value
