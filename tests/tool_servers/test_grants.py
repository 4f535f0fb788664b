"""Replicas sharing one OAuth grant in the database (tool_servers.grants), against a real
authorization server that rotates refresh tokens (tests/support/oauth_mcp_server.py): each
replica has its own engine on the same database, as two gateways do."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path

import httpx2
import pytest
from cryptography.fernet import Fernet, MultiFernet
from mcp.shared.auth import OAuthToken
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from db.base import utcnow
from db.engine import create_engine, session_factory
from db.models import MCPServerGrant
from mcp_client.config import AuthorizationCodeAuth, MCPServerConfig
from mcp_client.conformance import follow_the_redirect
from mcp_client.grant_store import GrantStore
from mcp_client.oauth import http_auth
from migrations.commands import upgrade
from tests.support.databases import fresh_database
from tests.support.oauth_mcp_server import Authority, serve_protected
from tool_servers.grants import ServerGrants, StoredGrant

SERVER = "protected"
KEY = Fernet.generate_key()
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "replica", "version": "1"},
    },
}
ACCEPT = {"accept": "application/json, text/event-stream"}


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with fresh_database(request.param, tmp_path) as url:
        upgrade(url)
        yield url


def _config(url: str) -> MCPServerConfig:
    auth = AuthorizationCodeAuth(
        type="authorization_code", redirect_uri="http://127.0.0.1:9/oauth/callback"
    )
    return MCPServerConfig(
        name=SERVER, transport="streamable_http", url=url, roles=["user"], auth=auth
    )


@asynccontextmanager
async def _replica(database_url: str) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    engine = create_engine(database_url)
    try:
        yield session_factory(engine)
    finally:
        await engine.dispose()


def _grants(sessions: async_sessionmaker[AsyncSession]) -> ServerGrants:
    return ServerGrants(sessions, MultiFernet([Fernet(KEY)]))


class _Watched(StoredGrant):
    """The replica's own store, unchanged, telling the test when it found the refresh claimed."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession], url: str) -> None:
        super().__init__(sessions, MultiFernet([Fernet(KEY)]), SERVER, url)
        self.found_claimed = asyncio.Event()

    async def claim_refresh(self, seconds: float) -> bool:
        claimed = await super().claim_refresh(seconds)
        if not claimed:
            self.found_claimed.set()
        return claimed


async def _initialize(config: MCPServerConfig, store: GrantStore, *, consent: bool) -> int:
    """One MCP request through the gateway's OAuth provider for ``store``; its HTTP status."""
    auth = http_auth(config, {}, store, follow_the_redirect if consent else None)
    assert config.url is not None
    async with httpx2.AsyncClient(auth=auth, timeout=30) as client:
        response = await client.post(config.url, json=INITIALIZE, headers=ACCEPT)
    return response.status_code


async def _expire_the_access_token(sessions: async_sessionmaker[AsyncSession]) -> None:
    async with sessions.begin() as session:
        await session.execute(
            update(MCPServerGrant).values(expires_at=utcnow() - timedelta(hours=1))
        )


async def test_replicas_meeting_an_expired_token_together_refresh_it_once(
    database_url: str,
) -> None:
    # The first replica's refresh reaches the authorization server, which rotates the token but
    # holds its answer; meanwhile the second replica needs a refresh too. Sending the same
    # (now spent) refresh token would be refused, and a refusal ends the grant for everyone.
    authority = Authority(hold_refresh=threading.Event())
    with serve_protected(authority) as url:
        config = _config(url)
        async with _replica(database_url) as first, _replica(database_url) as second:
            assert await _initialize(config, _grants(first).store(config), consent=True) == 200
            await _expire_the_access_token(first)
            watched = _Watched(second, url)
            try:
                one = asyncio.create_task(
                    _initialize(config, _grants(first).store(config), consent=False)
                )
                assert await asyncio.to_thread(authority.refresh_rotated.wait, 20)
                other = asyncio.create_task(_initialize(config, watched, consent=False))
                await asyncio.wait_for(watched.found_claimed.wait(), 10)
            finally:
                authority.hold_refresh.set()
            assert await asyncio.gather(one, other) == [200, 200]

            assert authority.grants["refresh_token"] == 1
            stored = await _grants(second).store(config).get_tokens()
            assert stored is not None
            assert stored.access_token in authority.access_tokens
            assert await _grants(second).store(config).lost_reason() is None


async def test_one_replica_at_a_time_claims_the_refresh_until_tokens_are_stored_or_it_lapses(
    database_url: str,
) -> None:
    url = "http://127.0.0.1:9/mcp"
    config = _config(url)
    async with _replica(database_url) as first, _replica(database_url) as second:
        one, other = _grants(first).store(config), _grants(second).store(config)
        assert not await one.claim_refresh(60)  # no grant yet: nothing to refresh
        await one.set_tokens(OAuthToken(access_token="a", refresh_token="r", expires_in=60))

        assert await one.claim_refresh(60)
        assert not await other.claim_refresh(60)
        await one.set_tokens(OAuthToken(access_token="b", refresh_token="s", expires_in=60))
        assert await other.claim_refresh(60)  # storing the new tokens ended the claim

        await one.release_refresh()  # not its claim: the other replica's stays
        assert not await one.claim_refresh(60)
        await other.release_refresh()
        assert await one.claim_refresh(0)  # a claim whose holder died lapses at its end
        assert await other.claim_refresh(60)
        await other.drop_tokens("refused")
        assert not await one.claim_refresh(60)  # no tokens: nothing to refresh
