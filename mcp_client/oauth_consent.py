"""An admin's consent for an authorization-code server, in two steps that may run on different
replicas: ``begin_consent`` (discovery and registration by the SDK's provider, then the
authorization URL with PKCE) and ``complete_consent`` (the code from the callback exchanged for
tokens, which go to the server's ``GrantStore``).

The SDK runs the whole flow inside one request, waiting for the code; a gateway cannot wait
there, since the admin's browser may bring the code back to any replica. So the flow stops where
the SDK would redirect the person, and what the exchange needs travels in ``PendingConsent``
(kept secret by the caller: it holds the PKCE verifier).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from urllib.parse import urlencode, urljoin

import httpx2
import mcp_types as types
from mcp.client.auth import OAuthTokenError
from mcp.client.auth.oauth2 import OAuthContext, PKCEParameters
from mcp.client.auth.utils import handle_token_response_scopes, validate_authorization_response_iss
from mcp.shared.auth import OAuthToken
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from pydantic import BaseModel

from mcp_client.config import AuthorizationCodeAuth, MCPServerConfig
from mcp_client.grant_store import Discovery, GrantStore
from mcp_client.identity import client_info
from mcp_client.oauth import SharedGrantProvider, client_metadata, registered_client
from mcp_client.oauth_common import oauth_error

TIMEOUT_SECONDS = 30.0


class PendingConsent(BaseModel):
    """One authorization request on its way through the admin's browser."""

    server: str
    authorization_url: str
    state: str
    code_verifier: str
    redirect_uri: str
    resource: str | None = None
    scope: str | None = None


class ConsentFailed(Exception):
    """The server cannot be connected: the message says why, for the admin."""


class _Ready(BaseException):
    """Carries the authorization request out of the SDK's flow. A BaseException, because the
    flow logs any Exception as a failure on its way out, and this is where we mean to stop."""

    def __init__(self, pending: PendingConsent) -> None:
        super().__init__("authorization request ready")
        self.pending = pending


def _auth_of(config: MCPServerConfig) -> AuthorizationCodeAuth:
    if not isinstance(config.auth, AuthorizationCodeAuth) or config.url is None:
        raise ConsentFailed(f"`{config.name}` does not use the authorization-code flow")
    return config.auth


async def begin_consent(
    config: MCPServerConfig, environ: Mapping[str, str], store: GrantStore, redirect_uri: str
) -> PendingConsent:
    """Discovers the server's authorization server (registering the client there if needed),
    stores what it found, and returns the request to send the admin to."""
    auth = _auth_of(config)
    redirect_uri = auth.redirect_uri or redirect_uri
    registered = registered_client(auth, environ, redirect_uri)
    metadata = client_metadata(auth, redirect_uri, registered.client_secret if registered else None)
    starter = _ConsentStarter(
        config.name,
        str(config.url),
        metadata,
        store,
        registered=registered,
        consent=True,
        client_metadata_url=auth.client_metadata_url,
    )
    initialize = types.JSONRPCRequest(
        jsonrpc="2.0",
        id=1,
        method="initialize",
        params={
            "protocolVersion": types.LATEST_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": client_info().model_dump(mode="json", exclude_none=True),
        },
    )
    headers = {
        "accept": "application/json, text/event-stream",
        MCP_PROTOCOL_VERSION_HEADER: types.LATEST_PROTOCOL_VERSION,
    }
    try:
        async with httpx2.AsyncClient(auth=starter, timeout=TIMEOUT_SECONDS) as client:
            response = await client.post(
                str(config.url), json=initialize.model_dump(mode="json"), headers=headers
            )
    except _Ready as ready:
        await starter.keep_discovery()
        return ready.pending
    except httpx2.HTTPError as exc:
        raise ConsentFailed(f"the server could not be reached: {type(exc).__name__}") from exc
    raise ConsentFailed(
        f"the server did not ask for authorization (it answered HTTP {response.status_code})"
    )


class _ConsentStarter(SharedGrantProvider):
    """The SDK's flow up to the point where it would send a person to the authorization server;
    it starts as if no tokens were held, so the flow always gets there."""

    def __init__(self, server: str, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._server = server

    async def _initialize(self) -> None:
        await super()._initialize()
        self.context.current_tokens = None
        self.context.token_expiry_time = None
        client = self.context.client_info
        wanted = self.context.client_metadata.redirect_uris or []
        if (
            client is not None
            and client.redirect_uris
            and not set(wanted) <= set(client.redirect_uris)
        ):
            # Registered for another callback address: register again rather than be refused.
            self.context.client_info = None

    async def keep_discovery(self) -> None:
        await self._keep_discovery()

    async def _perform_authorization_code_grant(self) -> tuple[str, str]:
        # As the SDK's own method builds the request (mcp 2.3.0), but keeping the verifier.
        context = self.context
        assert context.client_info is not None
        assert context.client_metadata.redirect_uris
        if context.oauth_metadata and context.oauth_metadata.authorization_endpoint:
            endpoint = str(context.oauth_metadata.authorization_endpoint)
        else:
            endpoint = urljoin(context.get_authorization_base_url(context.server_url), "/authorize")
        pkce = PKCEParameters.generate()
        state = secrets.token_urlsafe(32)
        redirect_uri = str(context.client_metadata.redirect_uris[0])
        params = {
            "response_type": "code",
            "client_id": context.client_info.client_id,
            "redirect_uri": redirect_uri,
            "state": state,
            "code_challenge": pkce.code_challenge,
            "code_challenge_method": "S256",
        }
        resource = None
        if context.should_include_resource_param(context.protocol_version):
            resource = params["resource"] = context.get_resource_url()
        scope = context.client_metadata.scope
        if scope:
            params["scope"] = scope
            if "offline_access" in scope.split():
                params["prompt"] = "consent"
        raise _Ready(
            PendingConsent(
                server=self._server,
                authorization_url=f"{endpoint}?{urlencode(params)}",
                state=state,
                code_verifier=pkce.code_verifier,
                redirect_uri=redirect_uri,
                resource=resource,
                scope=scope,
            )
        )


async def complete_consent(
    config: MCPServerConfig,
    environ: Mapping[str, str],
    store: GrantStore,
    pending: PendingConsent,
    *,
    code: str,
    issuer: str | None,
) -> OAuthToken:
    """Exchanges the callback's code (its ``state`` already matched ``pending``) for tokens and
    stores them; ``ConsentFailed`` says why not."""
    auth = _auth_of(config)
    discovery = await store.get_discovery() or Discovery()
    authorization_server = discovery.authorization_server
    try:
        validate_authorization_response_iss(issuer, authorization_server)
    except Exception as exc:
        raise ConsentFailed(f"the callback came from the wrong issuer: {exc}") from None
    client = await store.get_client_info() or registered_client(auth, environ, pending.redirect_uri)
    if client is None:
        raise ConsentFailed("the client registration was lost: connect again")
    context = OAuthContext(
        server_url=str(config.url),
        client_metadata=client_metadata(auth, pending.redirect_uri, client.client_secret),
        storage=store,
        redirect_handler=None,
        callback_handler=None,
    )
    context.client_info = client
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": pending.redirect_uri,
        "client_id": client.client_id or "",
        "code_verifier": pending.code_verifier,
    }
    if pending.resource is not None:
        data["resource"] = pending.resource
    data, headers = context.prepare_token_auth(
        data, {"Content-Type": "application/x-www-form-urlencoded"}
    )
    if authorization_server is not None and authorization_server.token_endpoint:
        endpoint = str(authorization_server.token_endpoint)
    else:
        endpoint = urljoin(context.get_authorization_base_url(context.server_url), "/token")
    try:
        async with httpx2.AsyncClient(timeout=TIMEOUT_SECONDS) as http:
            response = await http.post(endpoint, data=data, headers=headers)
    except httpx2.HTTPError as exc:
        raise ConsentFailed(
            f"the authorization server could not be reached: {type(exc).__name__}"
        ) from exc
    if response.status_code not in (200, 201):
        raise ConsentFailed(f"the authorization server refused the code: {oauth_error(response)}")
    try:
        tokens = await handle_token_response_scopes(response)
    except OAuthTokenError as exc:
        raise ConsentFailed(f"the authorization server's answer was not a token: {exc}") from None
    if tokens.scope is None:
        tokens.scope = pending.scope
    await store.set_tokens(tokens)
    return tokens
