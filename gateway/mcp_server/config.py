"""Settings of the gateway's own MCP endpoint (the `mcp_server:` section of the config)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class McpServerSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="serve the company's tools over MCP at /mcp")
    approval_wait_seconds: float = Field(
        60.0,
        ge=0,
        description="how long a tools/call waits for a required approval before it returns a "
        "tool error naming the pending approval",
    )
    approval_poll_seconds: float = Field(
        1.0, gt=0, description="how often a waiting call looks for the decision (any replica)"
    )
