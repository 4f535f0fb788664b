"""OAuth for HTTP tool servers against a real authorization server: the mcp SDK's MCPServer with
its OAuth provider interface, serving discovery, dynamic registration, PKCE, refresh and
revocation at 127.0.0.1."""

from __future__ import annotations

import asyncio

from mcp.shared.auth import AuthorizationCodeResult

from mcp_client import CatalogSettings, MCPServerConfig, MCPToolCatalog
from mcp_client.config import AuthorizationCodeAuth
from mcp_client.conformance import follow_the_redirect
from mcp_client.grant_store import MemoryGrantStore
from tests.support.oauth_mcp_server import Authority, serve_protected

SETTINGS = CatalogSettings(ping_interval=300, refresh_interval=300, retry_initial=0.05)


def _config(url: str) -> MCPServerConfig:
    auth = AuthorizationCodeAuth(
        type="authorization_code", redirect_uri="http://127.0.0.1:9/oauth/callback"
    )
    return MCPServerConfig(
        name="protected", transport="streamable_http", url=url, roles=["user"], auth=auth
    )


async def test_without_consent_the_server_waits_for_an_administrator() -> None:
    with serve_protected(Authority()) as url:
        catalog = MCPToolCatalog.from_config([_config(url)], SETTINGS, {})
        await catalog.start()
        try:
            status = catalog.status()["protected"]
            assert (status.state, status.reason) == (
                "degraded",
                "authorization required: an administrator must connect this server",
            )
        finally:
            await catalog.aclose()


async def test_consent_once_then_tokens_are_kept_where_the_gateway_says() -> None:
    authority = Authority()
    stores: dict[str, MemoryGrantStore] = {}

    def tokens(server: str) -> MemoryGrantStore:
        return stores.setdefault(server, MemoryGrantStore())

    consents: list[str] = []

    async def consent(authorization_url: str) -> AuthorizationCodeResult:
        consents.append(authorization_url)
        return await follow_the_redirect(authorization_url)

    with serve_protected(authority) as url:
        catalog = MCPToolCatalog.from_config(
            [_config(url)], SETTINGS, {}, tokens=tokens, consent=consent
        )
        await catalog.start()
        try:
            assert catalog.status()["protected"].state == "ready"
            assert (await catalog.call_tool("echo", {"text": "hi"})).content == "protected:hi"
            assert len(consents) == 1
            assert "code_challenge_method=S256" in consents[0]
            stored = await stores["protected"].get_tokens()
            assert stored is not None
            assert stored.access_token in authority.access_tokens
            assert authority.grants["authorization_code"] == 1
        finally:
            await catalog.aclose()


async def test_an_expired_token_is_refreshed_without_asking_again() -> None:
    authority = Authority(access_lifetime=1)
    consents: list[str] = []

    async def consent(authorization_url: str) -> AuthorizationCodeResult:
        consents.append(authorization_url)
        return await follow_the_redirect(authorization_url)

    with serve_protected(authority) as url:
        catalog = MCPToolCatalog.from_config([_config(url)], SETTINGS, {}, consent=consent)
        await catalog.start()
        try:
            deadline = asyncio.get_running_loop().time() + 20
            # Each round is a real call; within about a second the token expires and is renewed.
            while authority.grants["refresh_token"] == 0:
                assert asyncio.get_running_loop().time() < deadline, "no refresh happened"
                assert (await catalog.call_tool("echo", {"text": "a"})).content == "protected:a"
            assert (await catalog.call_tool("echo", {"text": "b"})).content == "protected:b"
            assert len(consents) == 1
            assert authority.grants["authorization_code"] == 1
        finally:
            await catalog.aclose()


async def test_after_revocation_the_server_is_degraded_until_consent_is_given_again() -> None:
    authority = Authority()
    allow = {"consent": True}

    async def consent(authorization_url: str) -> AuthorizationCodeResult:
        if not allow["consent"]:
            raise PermissionError("the administrator is away")
        return await follow_the_redirect(authorization_url)

    with serve_protected(authority) as url:
        catalog = MCPToolCatalog.from_config([_config(url)], SETTINGS, {}, consent=consent)
        await catalog.start()
        try:
            assert (await catalog.call_tool("echo", {"text": "a"})).content == "protected:a"
            allow["consent"] = False
            authority.revoke_everything()

            refused = await catalog.call_tool("echo", {"text": "b"})

            assert refused.is_error

            def degraded() -> bool:
                return catalog.status()["protected"].state == "degraded"

            assert await catalog.wait_for(degraded, timeout=10)
            assert catalog.status()["protected"].reason == (
                "authorization required: consent was not given "
                "(PermissionError: the administrator is away)"
            )
            allow["consent"] = True

            def ready() -> bool:
                return catalog.status()["protected"].state == "ready"

            assert await catalog.wait_for(ready, timeout=20)
            assert (await catalog.call_tool("echo", {"text": "c"})).content == "protected:c"
            assert authority.grants["authorization_code"] == 2
        finally:
            await catalog.aclose()
