"""The OpenAI Responses API request as the gateway accepts it.

Unknown top-level fields are ignored so newer SDKs keep working; known ones are validated. Input
items and tools are read loosely (``type`` decides) so an item or tool the gateway does not
translate gets a 400 naming it (``convert.py``), not a wall of union errors.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


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
