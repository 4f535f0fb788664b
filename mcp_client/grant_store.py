"""Where an OAuth grant lives: the SDK's ``TokenStorage`` plus what the gateway keeps with it.

``MemoryGrantStore`` keeps a grant in this process; the gateway gives its replicas one in the
database (tool_servers.grants), shared and sealed.
"""

from __future__ import annotations

import time
from typing import Protocol

from mcp.client.auth import TokenStorage
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from pydantic import BaseModel

from mcp_client.refresh_claim import RefreshClaims


class Discovery(BaseModel):
    """What discovery found, kept with the grant: a process that loads the tokens then refreshes
    them at the right token endpoint, for the right resource."""

    authorization_server: OAuthMetadata | None = None
    protected_resource: ProtectedResourceMetadata | None = None


class GrantStore(TokenStorage, RefreshClaims, Protocol):
    """The SDK's ``TokenStorage``, where ``get_tokens`` counts ``expires_in`` from now (not from
    when the token was issued), plus what discovery found, why a grant was lost, and the claim
    on refreshing it (``set_tokens`` and ``drop_tokens`` end a claim)."""

    async def get_discovery(self) -> Discovery | None: ...

    async def set_discovery(self, discovery: Discovery) -> None: ...

    async def drop_tokens(self, reason: str) -> None:
        """The grant is dead (refresh refused): forget the tokens, keep ``reason`` to show."""
        ...

    async def lost_reason(self) -> str | None:
        """Why the last grant ended, while no new one replaced it."""
        ...


class MemoryGrantStore:
    """A grant in this process only: each replica gets its own."""

    def __init__(self) -> None:
        self._tokens: OAuthToken | None = None
        self._stored_at = 0.0
        self._client: OAuthClientInformationFull | None = None
        self._discovery: Discovery | None = None
        self._lost: str | None = None
        self._claimed_until = 0.0

    async def get_tokens(self) -> OAuthToken | None:
        tokens = self._tokens
        if tokens is None or tokens.expires_in is None:
            return tokens
        elapsed = int(time.time() - self._stored_at)
        return tokens.model_copy(update={"expires_in": tokens.expires_in - elapsed})

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._tokens, self._stored_at, self._lost = tokens, time.time(), None
        self._claimed_until = 0.0

    async def claim_refresh(self, seconds: float) -> bool:
        now = time.monotonic()
        if self._claimed_until > now:
            return False
        self._claimed_until = now + seconds
        return True

    async def release_refresh(self) -> None:
        self._claimed_until = 0.0

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self._client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._client = client_info

    async def get_discovery(self) -> Discovery | None:
        return self._discovery

    async def set_discovery(self, discovery: Discovery) -> None:
        self._discovery = discovery

    async def drop_tokens(self, reason: str) -> None:
        self._tokens, self._lost, self._claimed_until = None, reason, 0.0

    async def lost_reason(self) -> str | None:
        return self._lost
