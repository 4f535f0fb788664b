"""An admin's consent in two steps (begin here, complete wherever the callback lands) against a
real authorization server; the grant then serves the catalog, which refreshes it and, when the
authorization server refuses the refresh, says so and stops using it."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import httpx

from mcp_client import CatalogSettings, MCPServerConfig, MCPToolCatalog
from mcp_client.config import AuthorizationCodeAuth
from mcp_client.grant_store import MemoryGrantStore
from mcp_client.oauth_consent import PendingConsent, begin_consent, complete_consent
from tests.support.oauth_mcp_server import Authority, serve_protected

SETTINGS = CatalogSettings(ping_interval=300, refresh_interval=300, retry_initial=0.05)
CALLBACK = "http://127.0.0.1:9/admin/oauth/callback"


def _config(url: str) -> MCPServerConfig:
    return MCPServerConfig(
        name="protected",
        transport="streamable_http",
        url=url,
        roles=["user"],
        auth=AuthorizationCodeAuth(type="authorization_code"),
    )


def _approve(pending: PendingConsent) -> dict[str, str]:
    """The admin's browser at the authorization server, which approves at once and redirects."""
    response = httpx.get(pending.authorization_url, follow_redirects=False)
    assert response.is_redirect, response.text
    location = response.headers["location"]
    assert location.startswith(CALLBACK)
    return {key: values[0] for key, values in parse_qs(urlsplit(location).query).items()}


async def _connect(config: MCPServerConfig, store: MemoryGrantStore) -> None:
    pending = await begin_consent(config, {}, store, CALLBACK)
    assert "code_challenge_method=S256" in pending.authorization_url
    answer = _approve(pending)
    assert answer["state"] == pending.state
    await complete_consent(config, {}, store, pending, code=answer["code"], issuer=None)


async def test_consent_given_through_a_callback_serves_the_catalog() -> None:
    authority = Authority()
    store = MemoryGrantStore()
    with serve_protected(authority) as url:
        config = _config(url)
        await _connect(config, store)
        assert authority.grants["authorization_code"] == 1
        catalog = MCPToolCatalog.from_config([config], SETTINGS, {}, tokens=lambda _: store)
        await catalog.start()
        try:
            assert catalog.status()["protected"].state == "ready"
            assert (await catalog.call_tool("echo", {"text": "hi"})).content == "protected:hi"
        finally:
            await catalog.aclose()


async def test_an_expired_token_is_refreshed_before_use() -> None:
    authority = Authority(access_lifetime=0)  # every token is expired when issued
    store = MemoryGrantStore()
    with serve_protected(authority) as url:
        config = _config(url)
        await _connect(config, store)
        catalog = MCPToolCatalog.from_config([config], SETTINGS, {}, tokens=lambda _: store)
        await catalog.start()
        try:
            assert catalog.status()["protected"].state == "ready"
            assert (await catalog.call_tool("echo", {"text": "a"})).content == "protected:a"
            assert authority.grants["refresh_token"] >= 1
            assert authority.grants["authorization_code"] == 1
        finally:
            await catalog.aclose()


async def test_a_revoked_grant_degrades_the_server_with_the_reason_until_reconnected() -> None:
    authority = Authority()
    store = MemoryGrantStore()
    with serve_protected(authority) as url:
        config = _config(url)
        await _connect(config, store)
        catalog = MCPToolCatalog.from_config([config], SETTINGS, {}, tokens=lambda _: store)
        await catalog.start()
        try:
            assert (await catalog.call_tool("echo", {"text": "a"})).content == "protected:a"
            authority.revoke_everything()

            assert (await catalog.call_tool("echo", {"text": "b"})).is_error

            def degraded() -> bool:
                return catalog.status()["protected"].state == "degraded"

            assert await catalog.wait_for(degraded, timeout=10)
            reason = catalog.status()["protected"].reason or ""
            assert reason.startswith("token refresh failed: invalid_grant (HTTP 400)"), reason
            assert reason.endswith("reconnect the server in the admin UI")
            assert await store.get_tokens() is None

            await _connect(config, store)
            catalog.reconnect("protected")

            def ready() -> bool:
                return catalog.status()["protected"].state == "ready"

            assert await catalog.wait_for(ready, timeout=20)
            assert (await catalog.call_tool("echo", {"text": "c"})).content == "protected:c"
        finally:
            await catalog.aclose()
