"""Connecting an authorization-code server: an admin's consent, begun on one replica and
completed on whichever the browser comes back to.

What the completion needs (the PKCE verifier among it) travels sealed with the token key, in a
cookie of the admin's browser: no replica has to remember it, it expires on its own, and the
callback only works in the browser that began it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from cryptography.fernet import InvalidToken
from mcp.client.auth import OAuthFlowError
from pydantic import BaseModel, ValidationError

from llm_service.errors import InvalidRequest
from mcp_client.backend import BackendUnavailable
from mcp_client.config import MCPServerConfig
from mcp_client.oauth_consent import (
    ConsentFailed,
    PendingConsent,
    begin_consent,
    complete_consent,
)
from tool_servers.errors import ConnectFailed, ConsentExpired
from tool_servers.grants import NO_KEY, ServerGrants, uses_consent

# How long an admin has between "Connect" and the callback.
CONSENT_SECONDS = 600
ServerLookup = Callable[[str], Awaitable[MCPServerConfig | None]]


class _Sealed(BaseModel):
    pending: PendingConsent
    key_id: int


class ServerConnections:
    """Begins and completes admins' consents for the servers ``lookup`` finds."""

    def __init__(
        self,
        grants: ServerGrants,
        lookup: ServerLookup,
        environ: Mapping[str, str],
        reconnect: Callable[[str], Awaitable[None]],
    ) -> None:
        self._grants = grants
        self._lookup = lookup
        self._environ = environ
        self._reconnect = reconnect

    async def _server(self, name: str) -> MCPServerConfig:
        config = await self._lookup(name)
        if config is None:
            raise InvalidRequest(f"There is no tool server named `{name}`.", param="name")
        if not uses_consent(config):
            raise InvalidRequest(
                f"`{name}` does not use the authorization-code flow: there is nothing to connect.",
                param="name",
            )
        if not self._grants.has_key:
            raise InvalidRequest(f"`{name}` cannot be connected: {NO_KEY}.", param="auth")
        return config

    async def begin(self, name: str, redirect_uri: str, key_id: int) -> tuple[str, str]:
        """The authorization URL to send the admin to, and the sealed request for the cookie."""
        config = await self._server(name)
        try:
            pending = await begin_consent(
                config, self._environ, self._grants.store(config), redirect_uri
            )
        except (ConsentFailed, OAuthFlowError, BackendUnavailable) as exc:
            raise ConnectFailed(f"`{name}` cannot be connected: {exc}") from None
        sealed = self._grants.seal(_Sealed(pending=pending, key_id=key_id).model_dump_json())
        return pending.authorization_url, sealed

    def opened(self, sealed: str, state: str) -> tuple[PendingConsent, int]:
        """The request a callback answers; ``ConsentExpired`` when it is too old, forged, or for
        another request."""
        if not self._grants.has_key:
            raise ConsentExpired(EXPIRED)
        try:
            found = _Sealed.model_validate_json(self._grants.unseal(sealed, CONSENT_SECONDS))
        except (InvalidToken, ValidationError):
            found = None
        if found is None or found.pending.state != state:
            raise ConsentExpired(EXPIRED)
        return found.pending, found.key_id

    async def complete(
        self, pending: PendingConsent, key_id: int, code: str, issuer: str | None
    ) -> None:
        """Exchanges the code, stores the tokens, audits, and reconnects the server here."""
        config = await self._server(pending.server)
        try:
            tokens = await complete_consent(
                config,
                self._environ,
                self._grants.store(config),
                pending,
                code=code,
                issuer=issuer,
            )
        except (ConsentFailed, BackendUnavailable) as exc:
            raise ConnectFailed(f"`{config.name}` was not connected: {exc}") from None
        await self._grants.record_connection(config.name, key_id, {"scope": tokens.scope})
        await self._reconnect(config.name)


EXPIRED = (
    "This authorization is unknown or expired (it lasts 10 minutes), or it was started in "
    "another browser. Go back to the Servers page and click Connect again."
)
