"""OAuth grants of authorization-code MCP servers, in the database so every replica uses (and
refreshes) the same tokens. Tokens and the registered client are sealed with the gateway's token
key (Fernet: authenticated encryption) before they reach a row; nothing here logs them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from cryptography.fernet import InvalidToken, MultiFernet
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from sqlalchemy import delete, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from db.base import utcnow
from db.models import AuditEvent, MCPServerGrant
from mcp_client.backend import BackendUnavailable
from mcp_client.catalog import MCPToolCatalog
from mcp_client.config import AuthorizationCodeAuth, MCPServerConfig
from mcp_client.grant_store import Discovery, GrantStore

NO_KEY = (
    "no token key: set `mcp_token_key` (GATEWAY_MCP_TOKEN_KEY) so the gateway can keep this "
    "server's OAuth tokens"
)
UNREADABLE = (
    "the stored OAuth grant cannot be read with the current token key (was `mcp_token_key` "
    "changed?); reconnect the server in the admin UI"
)


def uses_consent(config: MCPServerConfig) -> bool:
    """The server's tokens come from an admin's consent (and so live in the database)."""
    return isinstance(config.auth, AuthorizationCodeAuth)


@dataclass(frozen=True, slots=True)
class GrantSummary:
    """What the Servers page shows of a grant (never a token)."""

    connected: bool
    connected_at: datetime | None
    connected_by_key_id: int | None
    expires_at: datetime | None
    lost_reason: str | None


class ServerGrants:
    """The grants of all servers; ``store(config)`` is one server's ``GrantStore``. Without a
    key (``seal`` None) every store refuses with ``NO_KEY``, which degrades the server."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession], seal: MultiFernet | None):
        self._sessions = sessions
        self._seal = seal

    @property
    def has_key(self) -> bool:
        return self._seal is not None

    def seal(self, text: str) -> str:
        assert self._seal is not None  # callers check has_key
        return self._seal.encrypt(text.encode("utf-8")).decode("ascii")

    def unseal(self, sealed: str, max_age_seconds: int) -> str:
        """Raises ``InvalidToken`` when forged, from another key, or older than the limit."""
        assert self._seal is not None  # callers check has_key
        return self._seal.decrypt(sealed.encode("ascii"), ttl=max_age_seconds).decode("utf-8")

    def store(self, config: MCPServerConfig) -> GrantStore:
        if self._seal is None:
            return _Keyless()
        return StoredGrant(self._sessions, self._seal, config.name, config.url or "")

    async def summaries(self, servers: dict[str, MCPServerConfig]) -> dict[str, GrantSummary]:
        """For each of these servers that has a row for its current URL."""
        async with self._sessions() as session:
            rows = await session.scalars(
                select(MCPServerGrant).where(MCPServerGrant.server.in_(list(servers)))
            )
            found = {row.server: row for row in rows}
        return {
            name: GrantSummary(
                connected=row.tokens_sealed is not None,
                connected_at=row.connected_at,
                connected_by_key_id=row.connected_by_key_id,
                expires_at=row.expires_at,
                lost_reason=row.lost_reason,
            )
            for name, row in found.items()
            if row.server_url == (servers[name].url or "")
        }

    async def connections(self) -> dict[str, datetime]:
        """When each server was last connected by an admin: a change means new tokens."""
        async with self._sessions() as session:
            rows = await session.execute(
                select(MCPServerGrant.server, MCPServerGrant.connected_at).where(
                    MCPServerGrant.connected_at.is_not(None)
                )
            )
            return {server: at for server, at in rows if at is not None}

    async def record_connection(self, name: str, key_id: int, detail: dict[str, Any]) -> None:
        """The admin ``key_id`` connected the server (its tokens are stored): audited."""
        async with self._sessions.begin() as session:
            row = await session.get(MCPServerGrant, name, with_for_update=True)
            if row is not None:
                row.connected_at = utcnow()
                row.connected_by_key_id = key_id
            session.add(
                AuditEvent(
                    actor_key_id=key_id,
                    action="server.connected",
                    detail={"server": name, **detail},
                )
            )

    async def forget(self, session: AsyncSession, name: str) -> None:
        """Drops a server's grant, in the caller's transaction (the server is being removed)."""
        await session.execute(delete(MCPServerGrant).where(MCPServerGrant.server == name))


class GrantWatch:
    """Reconnects a degraded server at once when an admin connected it on another replica (its
    supervisor would otherwise wait out its retry pause). Run on each replica's refresh."""

    def __init__(self, grants: ServerGrants, catalog: MCPToolCatalog) -> None:
        self._grants = grants
        self._catalog = catalog
        self._seen: dict[str, datetime] = {}

    async def refresh(self) -> None:
        connections = await self._grants.connections()
        status = self._catalog.status()
        for name, at in connections.items():
            health = status.get(name)
            if self._seen.get(name) != at and health is not None and health.state == "degraded":
                self._catalog.reconnect(name)
        self._seen = connections


class StoredGrant:
    """One server's grant in ``mcp_server_grants``; a row for another URL counts as none."""

    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], seal: MultiFernet, server: str, url: str
    ) -> None:
        self._sessions = sessions
        self._seal = seal
        self._server = server
        self._url = url
        self._claim: datetime | None = None  # when this store's claim on refreshing ends

    async def _row(self) -> MCPServerGrant | None:
        async with self._sessions() as session:
            row = await session.get(MCPServerGrant, self._server)
        return row if row is not None and row.server_url == self._url else None

    def _open(self, sealed: str) -> str:
        try:
            return self._seal.decrypt(sealed.encode("ascii")).decode("utf-8")
        except InvalidToken:
            raise BackendUnavailable(UNREADABLE) from None

    def _close(self, text: str) -> str:
        return self._seal.encrypt(text.encode("utf-8")).decode("ascii")

    async def get_tokens(self) -> OAuthToken | None:
        row = await self._row()
        if row is None or row.tokens_sealed is None:
            return None
        tokens = OAuthToken.model_validate_json(self._open(row.tokens_sealed))
        if row.expires_at is None:
            return tokens.model_copy(update={"expires_in": None})
        remaining = int((row.expires_at - utcnow()).total_seconds())
        return tokens.model_copy(update={"expires_in": remaining})

    async def set_tokens(self, tokens: OAuthToken) -> None:
        async with self._sessions.begin() as session:
            row = await self._writable(session)
            row.tokens_sealed = self._close(tokens.model_dump_json())
            lifetime = tokens.expires_in
            row.expires_at = None if lifetime is None else utcnow() + timedelta(seconds=lifetime)
            row.lost_reason = None
            row.refresh_claimed_until = None  # whoever refreshes now finds these tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        row = await self._row()
        if row is None or row.client_sealed is None:
            return None
        return OAuthClientInformationFull.model_validate_json(self._open(row.client_sealed))

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        async with self._sessions.begin() as session:
            row = await self._writable(session)
            row.client_sealed = self._close(client_info.model_dump_json())

    async def get_discovery(self) -> Discovery | None:
        row = await self._row()
        if row is None or row.discovery is None:
            return None
        return Discovery.model_validate(row.discovery)

    async def set_discovery(self, discovery: Discovery) -> None:
        async with self._sessions.begin() as session:
            row = await self._writable(session)
            row.discovery = discovery.model_dump(mode="json", exclude_none=True)

    async def drop_tokens(self, reason: str) -> None:
        async with self._sessions.begin() as session:
            row = await self._writable(session)
            row.tokens_sealed = None
            row.expires_at = None
            row.lost_reason = reason
            row.refresh_claimed_until = None

    async def lost_reason(self) -> str | None:
        row = await self._row()
        return None if row is None else row.lost_reason

    async def claim_refresh(self, seconds: float) -> bool:
        # One conditional UPDATE: atomic on both databases, and on SQLite no read lock to
        # upgrade (two replicas reading first would have one of them refused).
        now = utcnow()
        until = now + timedelta(seconds=seconds)
        grant = MCPServerGrant
        async with self._sessions.begin() as session:
            result = await session.execute(
                update(grant)
                .where(
                    grant.server == self._server,
                    grant.server_url == self._url,
                    grant.tokens_sealed.is_not(None),
                    or_(grant.refresh_claimed_until.is_(None), grant.refresh_claimed_until <= now),
                )
                .values(refresh_claimed_until=until)
            )
        claimed = bool(getattr(result, "rowcount", 0))
        if claimed:
            self._claim = until
        return claimed

    async def release_refresh(self) -> None:
        claim, self._claim = self._claim, None
        if claim is None:
            return
        grant = MCPServerGrant
        async with self._sessions.begin() as session:
            # Only this store's own claim: past its end another replica may hold a new one.
            await session.execute(
                update(grant)
                .where(grant.server == self._server, grant.refresh_claimed_until == claim)
                .values(refresh_claimed_until=None)
            )

    async def _writable(self, session: AsyncSession) -> MCPServerGrant:
        row = await session.get(MCPServerGrant, self._server, with_for_update=True)
        if row is None:
            row = MCPServerGrant(server=self._server, server_url=self._url)
            session.add(row)
        elif row.server_url != self._url:  # the server moved: nothing of the old grant applies
            row.server_url = self._url
            row.tokens_sealed = row.client_sealed = row.lost_reason = None
            row.discovery = row.expires_at = row.connected_at = row.refresh_claimed_until = None
            row.connected_by_key_id = None
        row.updated_at = utcnow()
        return row


class _Keyless:
    """A store for a gateway without a token key: every use says what to set."""

    async def get_tokens(self) -> OAuthToken | None:
        raise BackendUnavailable(NO_KEY)

    async def set_tokens(self, tokens: OAuthToken) -> None:
        raise BackendUnavailable(NO_KEY)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        raise BackendUnavailable(NO_KEY)

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        raise BackendUnavailable(NO_KEY)

    async def get_discovery(self) -> Discovery | None:
        raise BackendUnavailable(NO_KEY)

    async def set_discovery(self, discovery: Discovery) -> None:
        raise BackendUnavailable(NO_KEY)

    async def drop_tokens(self, reason: str) -> None:
        raise BackendUnavailable(NO_KEY)

    async def lost_reason(self) -> str | None:
        raise BackendUnavailable(NO_KEY)

    async def claim_refresh(self, seconds: float) -> bool:
        raise BackendUnavailable(NO_KEY)

    async def release_refresh(self) -> None:
        raise BackendUnavailable(NO_KEY)
