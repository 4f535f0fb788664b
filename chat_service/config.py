"""Settings of the tool loop and approvals (the `tool_loop:` section of the config)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ToolLoopSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_tool_rounds: int = Field(10, ge=1, description="model calls with tools in one turn")
    max_tool_calls_per_turn: int = Field(50, ge=1)
    turn_timeout_seconds: float = Field(600.0, gt=0)
    tool_timeout_seconds: float = Field(60.0, gt=0)
    approval_expiry_seconds: float = Field(900.0, gt=0)
    allow_self_approval: bool = False
    server_tools_approval_wait_seconds: float = Field(
        30.0, ge=0, description="how long an OpenAI-compatible call waits for an approval"
    )
    sweep_interval_seconds: float = Field(5.0, gt=0)
    follow_poll_seconds: float = Field(0.25, gt=0)
    progress_interval_seconds: float = Field(
        0.25,
        ge=0,
        description="a running call's progress is streamed and stored at most this often (a"
        " task's status change and the final step always are)",
    )
    input_timeout_seconds: float = Field(
        120.0,
        gt=0,
        description="how long a forwarded request for input waits for the caller's answer"
        " before it is declined (never past the call's own timeout)",
    )
