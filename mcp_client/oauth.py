"""OAuth 2.1 for HTTP tool servers (MCP authorization), through the SDK's own providers.

The SDK does discovery (protected resource metadata, authorization server metadata, the
``WWW-Authenticate`` scope, step-up on 403 ``insufficient_scope``), client ID metadata documents
and dynamic registration, PKCE, and refresh. What it leaves to us is where the grant lives
(``GrantStore``: in memory by default; the gateway gives one its replicas share) and who consents
in the authorization-code flow (``Consent``: none by default, so such a server stays degraded
until someone connects it, see ``mcp_client.oauth_consent``).
"""

from __future__ import annotations

import asyncio
import time
import warnings
from collections.abc import AsyncGenerator, Mapping
from typing import Any, Protocol

import httpx2
from mcp.client.auth import (
    OAuthClientProvider,
    OAuthFlowError,
    OAuthRegistrationError,
    OAuthTokenError,
    TokenStorage,
)
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from mcp.shared.exceptions import MCPDeprecationWarning
from pydantic import AnyUrl

from mcp_client.config import (
    AuthorizationCodeAuth,
    ClientCredentialsAuth,
    IdentityAssertionAuth,
    MCPServerConfig,
)
from mcp_client.grant_store import Discovery, GrantStore
from mcp_client.identity import DISTRIBUTION
from mcp_client.identity_assertion import identity_assertion_auth
from mcp_client.oauth_common import oauth_error, secret_of
from mcp_client.refresh_claim import turn_to_refresh

NOT_CONNECTED = "authorization required: an administrator must connect this server"
# Refresh this long before the access token expires (at most half its remaining life), so a call
# or ping in that window renews it rather than meeting a 401.
REFRESH_AHEAD_SECONDS = 60.0
# The SDK's client metadata needs a redirect URI. Without consent the flow stops before
# registration or authorization (``_initialize``), so this one never goes on the wire.
_NEVER_SENT_REDIRECT = "http://127.0.0.1/oauth/callback"


class AuthorizationRequired(OAuthFlowError):
    """The server needs a person's consent and no one is there to give it."""


class TokenRefreshFailed(OAuthFlowError):
    """The authorization server refused the refresh token: the grant is gone."""


class Consent(Protocol):
    """Whoever approves an authorization request: sent to ``authorization_url``, they come back
    with the code (a test or the conformance runner following the redirect itself)."""

    async def __call__(self, authorization_url: str) -> AuthorizationCodeResult: ...


def describe_oauth_failure(exc: OAuthFlowError) -> str:
    if isinstance(exc, AuthorizationRequired | TokenRefreshFailed):
        return str(exc)
    if isinstance(exc, OAuthRegistrationError):
        return f"authorization failed: the client could not be registered ({exc})"
    if isinstance(exc, OAuthTokenError):
        return f"authorization failed: no token was granted ({exc})"
    return f"authorization failed: {exc}"


def http_auth(
    config: MCPServerConfig,
    environ: Mapping[str, str],
    storage: GrantStore,
    consent: Consent | None = None,
) -> httpx2.Auth | None:
    """The httpx2 auth for ``config.auth``; None when the server takes no OAuth."""
    auth = config.auth
    if auth is None:
        return None
    assert config.url is not None  # the config validator requires it for HTTP servers
    if isinstance(auth, ClientCredentialsAuth):
        return _client_credentials(config.url, auth, environ, storage)
    if isinstance(auth, IdentityAssertionAuth):
        return identity_assertion_auth(config.url, auth, environ, storage)
    return _authorization_code(config.url, auth, environ, storage, consent)


def _client_credentials(
    url: str, auth: ClientCredentialsAuth, environ: Mapping[str, str], storage: TokenStorage
) -> httpx2.Auth:
    scope = " ".join(auth.scopes) or None
    with warnings.catch_warnings():
        # Without `issuer` the SDK warns that discovery picks the server; the docs say so too.
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        if auth.client_auth == "private_key_jwt":
            assert auth.private_key_env is not None  # the config validator requires it
            signer = SignedJWTParameters(
                issuer=auth.client_id,
                subject=auth.client_id,
                signing_key=secret_of(environ, auth.private_key_env, "private key"),
                signing_algorithm=auth.signing_algorithm,
            )
            return PrivateKeyJWTOAuthProvider(
                url,
                storage,
                auth.client_id,
                signer.create_assertion_provider(),
                scope=scope,
                issuer=auth.issuer,
            )
        assert auth.client_secret_env is not None  # the config validator requires it
        return ClientCredentialsOAuthProvider(
            url,
            storage,
            auth.client_id,
            secret_of(environ, auth.client_secret_env, "client secret"),
            token_endpoint_auth_method=auth.client_auth,
            scope=scope,
            issuer=auth.issuer,
        )


def client_metadata(
    auth: AuthorizationCodeAuth, redirect_uri: str, secret: str | None
) -> OAuthClientMetadata:
    return OAuthClientMetadata(
        client_name=DISTRIBUTION,
        redirect_uris=[AnyUrl(redirect_uri)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope=" ".join(auth.scopes) or None,
        token_endpoint_auth_method="client_secret_basic" if secret else "none",
    )


def registered_client(
    auth: AuthorizationCodeAuth, environ: Mapping[str, str], redirect_uri: str
) -> OAuthClientInformationFull | None:
    """The pre-registered client the config names, if any."""
    if auth.client_id is None:
        return None
    variable = auth.client_secret_env
    secret = secret_of(environ, variable, "client secret") if variable else None
    return OAuthClientInformationFull(
        client_id=auth.client_id,
        client_secret=secret,
        redirect_uris=[AnyUrl(redirect_uri)],
        token_endpoint_auth_method="client_secret_basic" if secret else "none",
    )


def _authorization_code(
    url: str,
    auth: AuthorizationCodeAuth,
    environ: Mapping[str, str],
    storage: GrantStore,
    consent: Consent | None,
) -> httpx2.Auth:
    redirect_uri = auth.redirect_uri or _NEVER_SENT_REDIRECT
    registered = registered_client(auth, environ, redirect_uri)
    secret = registered.client_secret if registered else None
    handoff = _ConsentHandoff(consent)
    return SharedGrantProvider(
        url,
        client_metadata(auth, redirect_uri, secret),
        storage,
        registered=registered,
        consent=consent is not None,
        redirect_handler=handoff.redirect,
        callback_handler=handoff.callback,
        client_metadata_url=auth.client_metadata_url,
    )


def token_expiry(tokens: OAuthToken | None) -> float | None:
    """When to refresh tokens read from a ``GrantStore`` (``expires_in`` counted from now)."""
    if tokens is None or tokens.expires_in is None:
        return None
    remaining = float(tokens.expires_in)
    return time.time() + remaining - min(REFRESH_AHEAD_SECONDS, max(remaining, 0.0) / 2)


class SharedGrantProvider(OAuthClientProvider):
    """The SDK's provider, reading the grant from the store before every request: another
    replica may have refreshed (refresh tokens often work once) or an admin reconnected.

    Without consent it never starts an authorization of its own: no tokens means the server
    waits for an admin; a refused refresh ends the grant for every replica, with the reason.
    Replicas take turns to refresh (``refresh_claim``): one refreshes, the others use its tokens.
    """

    def __init__(
        self,
        server_url: str,
        metadata: OAuthClientMetadata,
        storage: GrantStore,
        *,
        registered: OAuthClientInformationFull | None,
        consent: bool,
        **kwargs: object,
    ) -> None:
        super().__init__(server_url, metadata, storage, **kwargs)  # type: ignore[arg-type]
        self._store = storage
        self._registered = registered
        self._consent = consent
        # The request (its task) holding the claim on refreshing the grant: requests share this
        # provider, and only the one that claimed may release.
        self._claimant: asyncio.Task[Any] | None = None

    async def _initialize(self) -> None:
        tokens = await self._store.get_tokens()
        if tokens is None and not self._consent:
            raise AuthorizationRequired(await self._store.lost_reason() or NOT_CONNECTED)
        context = self.context
        self._use(tokens)
        context.client_info = await self._store.get_client_info() or self._registered
        if context.oauth_metadata is None:
            discovery = await self._store.get_discovery()
            if discovery is not None:
                context.oauth_metadata = discovery.authorization_server
                context.protected_resource_metadata = discovery.protected_resource
        # `_initialized` stays False: the next request reads the store again.
        # The SDK refreshes next when the token expired: only with the claim, unless another
        # replica's refresh has just replaced the token.
        while not context.is_token_valid() and context.can_refresh_token():
            if await self._claim_or_take():
                break

    def _use(self, tokens: OAuthToken | None) -> None:
        self.context.current_tokens = tokens
        self.context.token_expiry_time = token_expiry(tokens)

    async def _claim_or_take(self) -> bool:
        """True when this replica is to refresh (it holds the claim); False when another
        replica's refresh (or an admin's reconnect) replaced the tokens, now in use here."""
        held = self.context.current_tokens
        stored = await turn_to_refresh(self._store, held.refresh_token if held else None)
        if stored is None:
            self._claimant = asyncio.current_task()
            return True
        if stored.tokens is None and not self._consent:
            raise AuthorizationRequired(await self._store.lost_reason() or NOT_CONNECTED)
        self._use(stored.tokens)  # none: the SDK asks for consent
        return False

    async def _release_claim(self) -> None:
        if self._claimant is not None and self._claimant is asyncio.current_task():
            self._claimant = None
            await self._store.release_refresh()

    async def _handle_token_response(self, response: httpx2.Response) -> None:
        await super()._handle_token_response(response)
        await self._keep_discovery()

    async def _keep_discovery(self) -> None:
        context = self.context
        if context.oauth_metadata is not None or context.protected_resource_metadata is not None:
            await self._store.set_discovery(
                Discovery(
                    authorization_server=context.oauth_metadata,
                    protected_resource=context.protected_resource_metadata,
                )
            )

    async def _handle_refresh_response(self, response: httpx2.Response) -> bool:
        held = self.context.current_tokens
        used = held.refresh_token if held else None
        await response.aread()  # its error code, should the refresh be refused
        if await super()._handle_refresh_response(response):
            return True
        stored = await self._store.get_tokens()
        if stored is not None and stored.refresh_token not in (None, used):
            # Another replica refreshed first, with the same single-use token (it held the claim
            # longer than the claim lasts): take its result.
            self._use(stored)
            return True
        if self._consent:
            return False  # the SDK asks for consent again
        reason = (
            f"token refresh failed: {oauth_error(response)}; reconnect the server in the admin UI"
        )
        await self._store.drop_tokens(reason)
        raise TokenRefreshFailed(reason)

    async def _auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The SDK's flow, except that a 401 to a token we can refresh is answered by a refresh
        (the token was revoked or expired early) before anyone is asked to consent again."""
        try:
            flow = super()._auth_flow(request)
            try:
                outgoing = await flow.__anext__()
                while True:
                    response = yield outgoing
                    if outgoing is request and response.status_code == 401 and self._may_refresh():
                        break
                    outgoing = await flow.asend(response)
            except StopAsyncIteration:
                return
            finally:
                await flow.aclose()
            async with self.context.lock:
                if await self._claim_or_take():
                    answer = yield await self._refresh_token()
                    await self._handle_refresh_response(answer)
            self._add_auth_header(request)
            yield request
        finally:
            # Stored or dropped tokens ended the claim already; a refresh that failed on the
            # way (the network, a cancelled call) must not hold the others back for its length.
            await self._release_claim()

    def _may_refresh(self) -> bool:
        return not self._consent and self.context.can_refresh_token()


class _ConsentHandoff:
    """The SDK asks in two steps (send the person there, then wait for the code); a ``Consent``
    answers in one."""

    def __init__(self, consent: Consent | None) -> None:
        self._consent = consent
        self._url: str | None = None

    async def redirect(self, authorization_url: str) -> None:
        if self._consent is None:
            raise AuthorizationRequired(NOT_CONNECTED)
        self._url = authorization_url

    async def callback(self) -> AuthorizationCodeResult:
        url, self._url = self._url, None
        if self._consent is None or url is None:
            raise AuthorizationRequired("no authorization request is waiting for consent")
        try:
            return await self._consent(url)
        except OAuthFlowError:
            raise
        except Exception as exc:  # whoever consents failed: the server waits for another try
            raise AuthorizationRequired(
                f"authorization required: consent was not given ({type(exc).__name__}: {exc})"
            ) from exc
