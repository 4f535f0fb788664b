"""The ``admin_ui.oidc`` section: which identity provider, which client, which groups are admins."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator


class OidcSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    issuer: str = Field(
        description="the provider's issuer URL; its /.well-known/openid-configuration is read"
    )
    client_id: str = Field(min_length=1)
    client_secret_env: str | None = Field(
        None,
        description="environment variable holding the client secret (unset: a public client, "
        "PKCE only)",
    )
    scopes: list[str] = Field(
        default_factory=lambda: ["openid", "email", "profile", "groups"],
        description="scopes asked for; `openid` is always sent",
    )
    person_claim: str = Field(
        "email", description="the ID token claim naming the person (the audit log's actor)"
    )
    groups_claim: str = Field("groups", description="the ID token claim listing the groups")
    require_verified_email: bool = Field(
        True,
        description="when the person claim is `email`, sign in only people whose provider says "
        "`email_verified: true` (false: for a provider that never sends it)",
    )
    roles_by_group: dict[str, list[str]] = Field(
        default_factory=dict,
        description="group -> gateway roles; only people given `admin` may sign in",
    )
    redirect_url: str | None = Field(
        None,
        description="the callback URL registered at the provider (default: this gateway's "
        "/admin/sso/callback as the browser reached it)",
    )
    display_name: str = Field("SSO", max_length=60, description="shown on the sign-in button")

    @field_validator("issuer")
    @classmethod
    def _no_trailing_slash(cls, value: str) -> str:
        if not value.startswith(("https://", "http://")):
            raise ValueError("must be an http(s) URL")
        return value.rstrip("/")
