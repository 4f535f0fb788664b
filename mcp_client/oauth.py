"""OAuth 2.1 for HTTP tool servers (MCP authorization), through the SDK's own providers.

The SDK does discovery (protected resource metadata, authorization server metadata, the
``WWW-Authenticate`` scope, step-up on 403 ``insufficient_scope``), client ID metadata documents
and dynamic registration, PKCE, and refresh before expiry. What it leaves to us is where tokens
live (``TokenStorage``: kept in memory by default; the gateway can give a store shared by its
replicas) and who consents in the authorization-code flow (``Consent``: none by default, so such a
server stays degraded until someone connects it).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Protocol

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

from mcp_client.backend import BackendUnavailable
from mcp_client.config import AuthorizationCodeAuth, ClientCredentialsAuth, MCPServerConfig
from mcp_client.identity import DISTRIBUTION


class AuthorizationRequired(OAuthFlowError):
    """The server needs a person's consent and no one is there to give it."""


class Consent(Protocol):
    """Whoever approves an authorization request: sent to ``authorization_url``, they come back
    with the code (the admin's browser through the gateway's callback, or a test following the
    redirect itself)."""

    async def __call__(self, authorization_url: str) -> AuthorizationCodeResult: ...


class MemoryTokenStorage:
    """Tokens and the registered client in this process only: each replica gets its own."""

    def __init__(self) -> None:
        self._tokens: OAuthToken | None = None
        self._client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self._tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self._client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._client = client_info


class _PreRegistered:
    """A store that answers with the configured client until registration stores another."""

    def __init__(self, inner: TokenStorage, client: OAuthClientInformationFull) -> None:
        self._inner = inner
        self._client = client

    async def get_tokens(self) -> OAuthToken | None:
        return await self._inner.get_tokens()

    async def set_tokens(self, tokens: OAuthToken) -> None:
        await self._inner.set_tokens(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return await self._inner.get_client_info() or self._client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await self._inner.set_client_info(client_info)


def describe_oauth_failure(exc: OAuthFlowError) -> str:
    if isinstance(exc, AuthorizationRequired):
        return str(exc)
    if isinstance(exc, OAuthRegistrationError):
        return f"authorization failed: the client could not be registered ({exc})"
    if isinstance(exc, OAuthTokenError):
        return f"authorization failed: no token was granted ({exc})"
    return f"authorization failed: {exc}"


def http_auth(
    config: MCPServerConfig,
    environ: Mapping[str, str],
    storage: TokenStorage,
    consent: Consent | None = None,
) -> httpx2.Auth | None:
    """The httpx2 auth for ``config.auth``; None when the server takes no OAuth."""
    auth = config.auth
    if auth is None:
        return None
    assert config.url is not None  # the config validator requires it for HTTP servers
    if isinstance(auth, ClientCredentialsAuth):
        return _client_credentials(config.url, auth, environ, storage)
    return _authorization_code(config.url, auth, environ, storage, consent)


def _secret(environ: Mapping[str, str], variable: str, what: str) -> str:
    value = environ.get(variable)
    if not value:
        raise BackendUnavailable(f"environment variable {variable} ({what}) is not set")
    return value


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
                signing_key=_secret(environ, auth.private_key_env, "private key"),
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
            _secret(environ, auth.client_secret_env, "client secret"),
            token_endpoint_auth_method=auth.client_auth,
            scope=scope,
            issuer=auth.issuer,
        )


def _authorization_code(
    url: str,
    auth: AuthorizationCodeAuth,
    environ: Mapping[str, str],
    storage: TokenStorage,
    consent: Consent | None,
) -> httpx2.Auth:
    redirect_uris = [AnyUrl(auth.redirect_uri)]
    variable = auth.client_secret_env
    secret = _secret(environ, variable, "client secret") if variable else None
    method = "client_secret_basic" if secret else "none"
    if auth.client_id is not None:
        registered = OAuthClientInformationFull(
            client_id=auth.client_id,
            client_secret=secret,
            redirect_uris=redirect_uris,
            token_endpoint_auth_method=method,
        )
        storage = _PreRegistered(storage, registered)
    metadata = OAuthClientMetadata(
        client_name=DISTRIBUTION,
        redirect_uris=redirect_uris,
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope=" ".join(auth.scopes) or None,
        token_endpoint_auth_method=method,
    )
    handoff = _ConsentHandoff(consent)
    return OAuthClientProvider(
        url,
        metadata,
        storage,
        redirect_handler=handoff.redirect,
        callback_handler=handoff.callback,
        client_metadata_url=auth.client_metadata_url,
    )


class _ConsentHandoff:
    """The SDK asks in two steps (send the person there, then wait for the code); a ``Consent``
    answers in one."""

    def __init__(self, consent: Consent | None) -> None:
        self._consent = consent
        self._url: str | None = None

    async def redirect(self, authorization_url: str) -> None:
        if self._consent is None:
            raise AuthorizationRequired(
                "authorization required: an administrator must connect this server"
            )
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
