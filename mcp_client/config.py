"""Configuration of tool servers and of the catalog, as they appear under ``mcp_servers:``."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mcp_client.url_prefixes import BadURL, parse

Transport = Literal["stdio", "streamable_http", "sse", "http_manifest"]
_SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,48}$")


class ToolOverride(BaseModel):
    """Per-tool settings that win over the server's."""

    model_config = ConfigDict(extra="forbid")

    roles: list[str] | None = None
    requires_approval: bool | None = None
    auto_approved: bool | None = None
    enabled: bool = True


class ClientCredentialsAuth(BaseModel):
    """OAuth client credentials (machine to machine): the gateway gets its own token."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["client_credentials"]
    client_id: str
    issuer: str | None = Field(
        None,
        description="the authorization server's issuer URL: the credentials are sent nowhere "
        "else (set it; without it they go to whichever server discovery names)",
    )
    client_auth: Literal["client_secret_basic", "client_secret_post", "private_key_jwt"] = (
        "client_secret_basic"
    )
    client_secret_env: str | None = Field(
        None, description="environment variable holding the client secret (client_secret_*)"
    )
    private_key_env: str | None = Field(
        None, description="environment variable holding the PEM private key (private_key_jwt)"
    )
    signing_algorithm: str = "RS256"
    scopes: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _secret_for_the_method(self) -> ClientCredentialsAuth:
        if self.client_auth == "private_key_jwt" and not self.private_key_env:
            raise ValueError("private_key_jwt needs `private_key_env`")
        if self.client_auth != "private_key_jwt" and not self.client_secret_env:
            raise ValueError(f"{self.client_auth} needs `client_secret_env`")
        return self


class AuthorizationCodeAuth(BaseModel):
    """OAuth authorization code with PKCE: a person consents once; the gateway keeps and refreshes
    the tokens. The client is registered dynamically, or by a client ID metadata document, unless
    ``client_id`` names a pre-registered one."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["authorization_code"]
    redirect_uri: str | None = Field(
        None,
        description="where the authorization server sends the consent back; default (the "
        "gateway): its own /admin/oauth/callback at the address the admin's browser used",
    )
    scopes: list[str] = Field(default_factory=list)
    client_id: str | None = None
    client_secret_env: str | None = None
    client_metadata_url: str | None = Field(
        None, description="an https URL serving this client's metadata document (used as its ID)"
    )


class IdentityAssertionAuth(BaseModel):
    """Enterprise-managed authorization (SEP-990): an ID token from the enterprise identity
    provider (IdP) is exchanged there for an ID-JAG (RFC 8693), which the MCP authorization server
    takes for an access token (RFC 7523 jwt-bearer, confidential client)."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["identity_assertion"]
    issuer: str = Field(
        description="the MCP authorization server's issuer URL: the ID-JAG (its audience) and the "
        "client secret go there only; no discovery picks it"
    )
    client_id: str = Field(description="this client at the MCP authorization server")
    client_secret_env: str = Field(description="environment variable holding its client secret")
    client_auth: Literal["client_secret_basic", "client_secret_post"] = "client_secret_basic"
    scopes: list[str] = Field(default_factory=list)
    idp_token_endpoint: str = Field(description="the IdP's token endpoint (token exchange)")
    idp_client_id: str | None = Field(None, description="this client at the IdP")
    idp_client_secret_env: str | None = Field(
        None, description="environment variable holding the IdP client secret (basic auth)"
    )
    id_token_env: str | None = Field(
        None, description="environment variable holding the ID token to exchange"
    )
    id_token_file: str | None = Field(
        None, description="file holding the ID token, read again for every exchange (rotation)"
    )

    @model_validator(mode="after")
    def _one_id_token_source(self) -> IdentityAssertionAuth:
        if (self.id_token_env is None) == (self.id_token_file is None):
            raise ValueError("set exactly one of `id_token_env` and `id_token_file`")
        if self.idp_client_secret_env and not self.idp_client_id:
            raise ValueError("`idp_client_secret_env` needs `idp_client_id`")
        return self


ServerAuth = Annotated[
    ClientCredentialsAuth | AuthorizationCodeAuth | IdentityAssertionAuth,
    Field(discriminator="type"),
]


class MCPServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    transport: Transport
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers_env: dict[str, str] = Field(
        default_factory=dict,
        description="HTTP header name -> environment variable holding its value",
    )
    roles: list[str] = Field(default_factory=list)
    tools: dict[str, ToolOverride] = Field(default_factory=dict)
    requires_approval: bool = False
    trusted: bool = Field(
        False, description="tool pinning offers this server's tools without an admin's review"
    )
    max_concurrency: int = Field(4, gt=0)
    call_timeout: float | None = Field(None, gt=0, description="default per-call timeout, seconds")
    ping_interval: float | None = Field(
        None, gt=0, description="seconds between pings; default tool_catalog.ping_interval"
    )
    auth: ServerAuth | None = Field(None, description="OAuth for an HTTP server (docs/mcp.md)")

    @model_validator(mode="after")
    def _transport_needs(self) -> MCPServerConfig:
        if not _SERVER_NAME.match(self.name):
            raise ValueError("name must be 1-48 letters, digits, `_` or `-`")
        if "__" in self.name:
            raise ValueError("name must not contain `__` (it separates server and tool)")
        if self.transport == "stdio" and not self.command:
            raise ValueError("a stdio server needs `command`")
        if self.transport != "stdio" and not self.url:
            raise ValueError(f"a {self.transport} server needs `url`")
        if self.auth is not None and self.transport not in ("streamable_http", "sse"):
            raise ValueError("`auth` applies to streamable_http and sse servers only")
        return self


class BundleConfig(BaseModel):
    """A named set of tools across servers, granted to roles or chosen per request."""

    model_config = ConfigDict(extra="forbid")

    name: str
    tools: list[str] = Field(
        default_factory=list, description="catalog names, `server__tool`, or `server__*`"
    )
    categories: list[str] = Field(default_factory=list)
    roles: list[str] = Field(
        default_factory=list, description="roles limited to this bundle (a union if several)"
    )


class CatalogSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    always_namespace: bool = False
    discovery_timeout: float = Field(10.0, gt=0)
    call_timeout: float = Field(60.0, gt=0)
    max_result_chars: int = Field(32_000, gt=100)
    refresh_interval: float = Field(300.0, gt=0)
    ping_interval: float = Field(
        30.0, gt=0, description="seconds between pings, so a server that died while idle is noticed"
    )
    retry_initial: float = Field(1.0, gt=0)
    retry_max: float = Field(60.0, gt=0)
    bundles: list[BundleConfig] = Field(default_factory=list)
    stdio_allow_list: list[list[str]] = Field(
        default_factory=list,
        description="exact command lines ([command, *args]) admins may add as stdio servers at "
        "run time; nothing else can be started that way",
    )
    http_allow_list: list[str] = Field(
        default_factory=list,
        description="URL prefixes (scheme://host[:port][/path]) that HTTP tool servers added at "
        "run time may use; empty: none may be added",
    )
    runtime_servers_refresh_seconds: float = Field(
        5.0, gt=0, description="how often servers other replicas added at run time are re-read"
    )

    @field_validator("http_allow_list")
    @classmethod
    def _readable_prefixes(cls, prefixes: list[str]) -> list[str]:
        for prefix in prefixes:
            try:
                parse(prefix)
            except BadURL as exc:
                raise ValueError(f"`{prefix}`: {exc}") from None
            if "?" in prefix or "#" in prefix:
                raise ValueError(f"`{prefix}`: a prefix takes no query or fragment")
        return prefixes
