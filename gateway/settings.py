"""The one validated settings object: the YAML config file, overridden by GATEWAY_* variables."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from chat_service.config import ToolLoopSettings
from db.engine import DEFAULT_DATABASE_URL, PoolSettings
from gateway.limits.config import KeyLimitsConfig
from gateway.retention import RetentionJobSettings
from gateway.tracing import TracingSettings
from governance import PinningSettings, ToolPolicySettings
from llm_service.config import ModelConfig
from mcp_client.config import CatalogSettings, MCPServerConfig


class ConfigError(Exception):
    """The configuration is invalid; the message names each bad key."""


class AdminUISettings(BaseModel):
    """The admin web UI (the ``admin_ui`` section)."""

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


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="GATEWAY_", env_nested_delimiter="__", extra="forbid"
    )

    database_url: str = DEFAULT_DATABASE_URL
    database_pool: PoolSettings = Field(default_factory=PoolSettings)
    admin_key: SecretStr | None = Field(
        None, description="when set, a key with role `admin` and this value exists at start"
    )
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    auth_cache_seconds: float = Field(
        5.0, ge=0, description="how long a key lookup is cached; revocation takes this long"
    )
    max_request_bytes: int = Field(4 * 1024 * 1024, gt=0)
    usage_flush_seconds: float = Field(1.0, gt=0)
    shutdown_drain_seconds: float = Field(
        25.0, gt=0, description="after SIGTERM, how long in-flight requests and streams may finish"
    )
    usage_retention_days: int | None = Field(
        90, gt=0, description="raw usage rows older than this are deleted; hourly rollups stay"
    )
    audit_retention_days: int | None = Field(
        None, gt=0, description="audit events older than this are deleted; unset: kept"
    )
    retention: RetentionJobSettings = Field(default_factory=RetentionJobSettings)
    models: list[ModelConfig] = Field(default_factory=list)
    max_messages: int = Field(1000, gt=0, description="more messages in one request get 413")
    max_json_depth: int = Field(64, gt=0, description="deeper JSON bodies get 400")
    key_limits: KeyLimitsConfig = Field(default_factory=KeyLimitsConfig)
    redis_url: str | None = Field(
        None, description="shares rate limits across replicas; unset: limits per process"
    )
    redis_key_prefix: str = "llm-gateway:"
    mcp_servers: list[MCPServerConfig] = Field(default_factory=list)
    tool_catalog: CatalogSettings = Field(default_factory=CatalogSettings)
    tool_loop: ToolLoopSettings = Field(default_factory=ToolLoopSettings)
    tracing: TracingSettings = Field(default_factory=TracingSettings)
    admin_ui: AdminUISettings = Field(default_factory=AdminUISettings)
    tool_pinning: PinningSettings = Field(default_factory=PinningSettings)
    tool_policies: ToolPolicySettings = Field(default_factory=ToolPolicySettings)

    @field_validator("models")
    @classmethod
    def _unique_model_names(cls, models: list[ModelConfig]) -> list[ModelConfig]:
        seen: set[str] = set()
        for model in models:
            if model.name in seen:
                raise ValueError(f"model name `{model.name}` appears twice")
            seen.add(model.name)
        for model in models:
            for alias in [*model.fallbacks, *model.context_window_fallbacks]:
                if alias not in seen:
                    raise ValueError(f"model `{model.name}` falls back to unknown model `{alias}`")
        return models

    @field_validator("mcp_servers")
    @classmethod
    def _unique_server_names(cls, servers: list[MCPServerConfig]) -> list[MCPServerConfig]:
        seen: set[str] = set()
        for server in servers:
            if server.name in seen:
                raise ValueError(f"MCP server name `{server.name}` appears twice")
            seen.add(server.name)
        return servers

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The environment wins over the file, so a deployment overrides without editing YAML.
        return (env_settings, init_settings)


def load_settings(path: Path | None) -> Settings:
    """Read the YAML file (if any) and the GATEWAY_* environment into one validated object."""
    raw: Any = {}
    if path is not None:
        try:
            raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except OSError as exc:
            raise ConfigError(f"cannot read {path}: {exc.strerror}") from exc
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path} is not valid YAML: {exc}") from exc
        if not isinstance(raw, dict):
            raise ConfigError(f"{path} must hold a mapping at the top level")
    try:
        return Settings(**raw)
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc, path)) from None


def describe_validation_error(exc: ValidationError, path: Path | None) -> str:
    where = f" in {path}" if path else ""
    lines = [f"invalid configuration{where}:"]
    for error in exc.errors():
        key = ".".join(str(part) for part in error["loc"]) or "(top level)"
        lines.append(f"  {key}: {error['msg']}")
    return "\n".join(lines)
