"""The one validated settings object: the YAML config file, overridden by GATEWAY_* variables."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from cryptography.fernet import Fernet, MultiFernet
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from accounts.limits.config import KeyLimitsConfig
from accounts.retention import RetentionJobSettings
from accounts.sso.config import OidcSettings
from chat_service.config import ToolLoopSettings
from db.engine import DEFAULT_DATABASE_URL, PoolSettings
from gateway.forwarded import proxy_networks
from gateway.mcp_server.config import McpServerSettings
from gateway.settings_env import (
    ENV_PREFIX,
    referenced_variables,
    source_variable,
    unknown_variables,
)
from gateway.tracing import TracingSettings
from governance import PinningSettings, ToolPolicySettings
from guardrails import GuardrailSettings
from llm_service.config import ModelConfig
from mcp_client.config import AuthorizationCodeAuth, CatalogSettings, MCPServerConfig
from notifications.config import NotificationSettings


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
    sign_in_attempts_per_key: int = Field(
        10,
        ge=1,
        description="sign-in attempts with keys of one prefix (a key's first 9 characters) "
        "from all clients together per minute",
    )
    oidc: OidcSettings | None = Field(
        None, description="sign in with the company's OpenID Connect provider (SSO)"
    )
    api_key_sign_in: bool = Field(
        True,
        description="admins may also sign in with an admin API key (the break-glass path); "
        "false needs `oidc`",
    )

    @model_validator(mode="before")
    @classmethod
    def _no_total(cls, data: Any) -> Any:
        if isinstance(data, dict) and "sign_in_attempts_total" in data:
            raise ValueError(
                "sign_in_attempts_total is gone: a limit for all clients together let anybody "
                "lock every admin out; remove it (sign_in_attempts_per_key limits one key's)"
            )
        return data

    @model_validator(mode="after")
    def _someone_can_sign_in(self) -> AdminUISettings:
        if not self.api_key_sign_in and self.oidc is None:
            raise ValueError("api_key_sign_in: false needs admin_ui.oidc, or nobody can sign in")
        return self


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid"
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
    forwarded_allow_ips: list[str] = Field(
        default_factory=list,
        description="the proxies (IP addresses or CIDR networks) whose X-Forwarded-For and "
        "X-Forwarded-Proto are believed: the client is the rightmost address they did not add; "
        "empty: nobody's, the client is the connection's peer",
    )
    usage_flush_seconds: float = Field(1.0, gt=0)
    usage_spool_dir: Path | None = Field(
        None,
        description="a directory where each process also appends the usage entries it has not "
        "written yet, so a killed process (kill -9, OOM) loses none: the next start writes them; "
        "not a node crash (no fsync). null: off",
    )
    shutdown_drain_seconds: float = Field(
        25.0, gt=0, description="after SIGTERM, how long in-flight requests and streams may finish"
    )
    usage_retention_days: int | None = Field(
        90, gt=0, description="raw usage rows older than this are deleted; hourly rollups stay"
    )
    audit_retention_days: int | None = Field(
        365, gt=0, description="audit events older than this are deleted; null: kept"
    )
    audit_seal_seconds: float = Field(
        2.0,
        gt=0,
        description="how soon a new audit event is sealed into the hash chain (docs/guardrails.md)",
    )
    responses_retention_days: int | None = Field(
        30, gt=0, description="stored /v1/responses answers older than this are deleted"
    )
    conversation_retention_days: int | None = Field(
        90,
        gt=0,
        description="conversations idle this long are deleted with their messages, events and "
        "tool calls; null: kept",
    )
    webhook_retention_days: int | None = Field(
        30, gt=0, description="delivered or given-up webhook deliveries older than this go"
    )
    retention: RetentionJobSettings = Field(default_factory=RetentionJobSettings)
    responses_builtin_tools: dict[str, str] = Field(
        default_factory=dict,
        description="/v1/responses built-in tool type (web_search, ...) -> the MCP tool in the "
        "caller's catalog offered in its place",
    )
    models: list[ModelConfig] = Field(default_factory=list)
    max_messages: int = Field(1000, gt=0, description="more messages in one request get 413")
    max_json_depth: int = Field(64, gt=0, description="deeper JSON bodies get 400")
    max_history_bytes: int = Field(
        16 * 1024 * 1024,
        gt=0,
        description="a conversation's history, or a /v1/responses `previous_response_id` chain, "
        "past this many bytes of JSON refuses the turn that would grow it with 413",
    )
    metrics_max_tool_labels: int = Field(
        1000,
        gt=0,
        description="distinct tool names /metrics labels; later ones (and tools outside the "
        "catalog) are `other`",
    )
    key_limits: KeyLimitsConfig = Field(default_factory=KeyLimitsConfig)
    redis_url: str | None = Field(
        None, description="shares rate limits across replicas; unset: limits per process"
    )
    redis_key_prefix: str = "llm-gateway:"
    mcp_token_key: SecretStr | None = Field(
        None,
        description="Fernet key(s) sealing MCP servers' OAuth tokens in the database, "
        "comma-separated: the first seals, all open (rotation); needed by authorization_code "
        "servers. Generate one with `python -c 'from cryptography.fernet import Fernet; "
        "print(Fernet.generate_key().decode())'`",
    )
    mcp_servers: list[MCPServerConfig] = Field(default_factory=list)
    tool_catalog: CatalogSettings = Field(default_factory=CatalogSettings)
    tool_loop: ToolLoopSettings = Field(default_factory=ToolLoopSettings)
    tracing: TracingSettings = Field(default_factory=TracingSettings)
    admin_ui: AdminUISettings = Field(default_factory=AdminUISettings)
    tool_pinning: PinningSettings = Field(default_factory=PinningSettings)
    tool_policies: ToolPolicySettings = Field(default_factory=ToolPolicySettings)
    guardrails: GuardrailSettings = Field(
        default_factory=GuardrailSettings,
        description="detectors on tool arguments and results (docs/guardrails.md); unset: a "
        "secret in arguments holds the call, one in a result is redacted, the rest observed",
    )
    notifications: NotificationSettings = Field(default_factory=NotificationSettings)
    mcp_server: McpServerSettings = Field(default_factory=McpServerSettings)

    @field_validator("database_url")
    @classmethod
    def _async_driver(cls, url: str) -> str:
        # The message never repeats the URL: it carries the database password.
        try:
            parsed = make_url(url)
        except ArgumentError:
            raise ValueError(
                "not a database URL; expected postgresql+asyncpg://user:pass@host:5432/db "
                "or sqlite+aiosqlite:///path.db"
            ) from None
        # Read from the name, not the dialect: loading an unknown dialect raises its own error.
        backend, _, driver = parsed.drivername.partition("+")
        if backend in ("postgres", "postgresql") and driver != "asyncpg":
            raise ValueError(
                f"`{parsed.drivername}://` is not supported: write postgresql+asyncpg://... "
                "(the gateway needs the asyncpg driver)"
            )
        if backend == "sqlite" and driver != "aiosqlite":
            raise ValueError("write sqlite+aiosqlite:///path.db (the gateway needs aiosqlite)")
        if backend not in ("postgresql", "sqlite"):
            raise ValueError(f"unsupported database `{backend}`: use PostgreSQL or SQLite")
        return url

    @field_validator("forwarded_allow_ips")
    @classmethod
    def _proxy_networks(cls, entries: list[str]) -> list[str]:
        return proxy_networks(entries)

    @field_validator("usage_spool_dir")
    @classmethod
    def _spool_dir(cls, path: Path | None) -> Path | None:
        # Absolute: every worker and the restarted process must find the same files whatever
        # their working directory.
        if path is not None and not path.is_absolute():
            raise ValueError("usage_spool_dir must be an absolute path")
        if path is not None and path.exists() and not path.is_dir():
            raise ValueError("usage_spool_dir exists and is not a directory")
        return path

    @field_validator("mcp_token_key")
    @classmethod
    def _fernet_keys(cls, key: SecretStr | None) -> SecretStr | None:
        # The message never repeats the value: it is a secret.
        if key is not None:
            token_seal(key)
        return key

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
    def _token_key_for_consent(
        cls, servers: list[MCPServerConfig], info: ValidationInfo
    ) -> list[MCPServerConfig]:
        # Absent from `info.data` when the key itself was refused: that error says enough.
        if "mcp_token_key" in info.data and info.data["mcp_token_key"] is None:
            for server in servers:
                if isinstance(server.auth, AuthorizationCodeAuth):
                    raise ValueError(
                        f"server `{server.name}` uses the authorization_code flow: set "
                        "`mcp_token_key` (GATEWAY_MCP_TOKEN_KEY) so its tokens can be stored"
                    )
        return servers

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


def token_seal(key: SecretStr) -> MultiFernet:
    """The sealer of MCP OAuth tokens for ``mcp_token_key``; ValueError for a malformed key."""
    parts = [part.strip() for part in key.get_secret_value().split(",") if part.strip()]
    if not parts:
        raise ValueError("empty: give one or more Fernet keys, comma-separated")
    keys = []
    for position, part in enumerate(parts, start=1):
        try:
            keys.append(Fernet(part))
        except (ValueError, TypeError):
            raise ValueError(
                f"key {position} is not a Fernet key (32 url-safe base64-encoded bytes)"
            ) from None
    return MultiFernet(keys)


def load_settings(path: Path | None, environ: Mapping[str, str] | None = None) -> Settings:
    """Read the YAML file (if any) and the GATEWAY_* environment into one validated object.

    ``environ`` is only checked for unknown GATEWAY_* names and to say which variable a bad
    value came from; pydantic-settings itself reads ``os.environ``.
    """
    environ = os.environ if environ is None else environ
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
        settings = Settings(**raw)
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc, path, environ)) from None
    # Variables the config names (a model's api_key_env, a webhook's secret_env) may be GATEWAY_*.
    unknown = unknown_variables(environ, Settings.model_fields, referenced_variables(settings))
    if unknown:
        raise ConfigError("\n".join(unknown))
    return settings


def describe_validation_error(
    exc: ValidationError, path: Path | None, environ: Mapping[str, str]
) -> str:
    """One line per bad value, each naming where it came from: the variable or the file."""
    lines = []
    for error in exc.errors():
        loc = [str(part) for part in error["loc"]]
        key = ".".join(loc) or "(top level)"
        variable = source_variable(loc, environ)
        if variable is not None:
            where = f"environment variable {variable}"
            if variable.removeprefix(ENV_PREFIX).lower() != key.replace(".", "__"):
                where += f" ({key})"
        elif path is not None:
            where = f"{path}: {key}"
        else:
            where = key
        lines.append(f"invalid configuration: {where}: {error['msg']}")
    return "\n".join(lines)
