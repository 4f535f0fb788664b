"""`notifications:` in gateway.yaml."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

NotificationEvent = Literal[
    "approval.requested",
    "approval.decided",
    "approval.expired",
    "tool.review_requested",
    "budget.threshold",
]


class WebhookConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        pattern=r"^[A-Za-z0-9_.-]{1,64}$",
        description="how the admin UI, the API and the log name it (never by its URL)",
    )
    url: str | None = Field(None, description="where events are POSTed (http or https)")
    url_env: str | None = Field(
        None,
        description="instead of url: the variable holding it (a Slack webhook URL is a secret)",
    )
    events: list[NotificationEvent] = Field(min_length=1)
    secret_env: str | None = Field(
        None,
        description="name of the environment variable holding the HMAC-SHA256 signing secret",
    )
    format: Literal["json", "slack"] = Field(
        "json", description="`slack`: an incoming-webhook `text` message with the approve link"
    )

    @field_validator("url")
    @classmethod
    def _http(cls, url: str | None) -> str | None:
        if url is not None and not url.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return url

    @model_validator(mode="after")
    def _one_address(self) -> WebhookConfig:
        if (self.url is None) == (self.url_env is None):
            raise ValueError("give exactly one of url and url_env")
        return self


class NotificationSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    webhooks: list[WebhookConfig] = Field(default_factory=list)
    admin_url: str = Field(
        "http://127.0.0.1:8000/admin",
        description="the admin UI as reviewers reach it, for the links in notifications",
    )
    max_attempts: int = Field(8, ge=1, description="then the delivery is given up (and shown)")
    retry_base_seconds: float = Field(2.0, gt=0, description="backoff: base * 2^(attempt-1)")
    retry_max_seconds: float = Field(600.0, gt=0)
    poll_seconds: float = Field(1.0, gt=0, description="how often each replica looks for work")
    timeout_seconds: float = Field(10.0, gt=0)
    lease_seconds: float = Field(
        60.0, gt=0, description="a claimed delivery is retried by another replica after this"
    )

    @field_validator("webhooks")
    @classmethod
    def _unique_names(cls, webhooks: list[WebhookConfig]) -> list[WebhookConfig]:
        names = [webhook.name for webhook in webhooks]
        for name in names:
            if names.count(name) > 1:
                raise ValueError(f"webhook name `{name}` appears twice")
        return webhooks
