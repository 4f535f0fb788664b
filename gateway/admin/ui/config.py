"""Settings of the admin web UI (the ``admin_ui`` section of the config)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class AdminUISettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    session_seconds: float = Field(
        8 * 3600, gt=0, description="an admin web session ends this long after sign-in"
    )
    queue_poll_seconds: float = Field(
        1.0, gt=0, description="how often the live approval queue polls the database"
    )
    sign_in_attempts_per_client: int = Field(
        10, ge=1, description="sign-in attempts one client address may make per minute"
    )
    sign_in_attempts_total: int = Field(
        100, ge=1, description="sign-in attempts all clients together may make per minute"
    )
