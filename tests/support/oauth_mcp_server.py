"""An MCP server that is also its own OAuth 2.1 authorization server, both from the mcp SDK
(MCPServer with an OAuthAuthorizationServerProvider), run on 127.0.0.1.

The authorization server approves every request at once (no login page) and can be told to make
access tokens expire on issue (every request then refreshes) or to revoke everything it issued.
It counts the grants it served, so tests see a refresh happen, and can hold a refresh's answer
after rotating the token (``hold_refresh``), as a slow network would, to stage a race.
"""

from __future__ import annotations

import secrets
import socket
import threading
import time
import warnings
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import anyio.to_thread
import uvicorn
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from mcp.shared.exceptions import MCPDeprecationWarning

_LIFETIME_SECONDS = 3600


@dataclass
class Authority:
    """The authorization server's state: registered clients, issued codes and tokens."""

    access_lifetime: int = _LIFETIME_SECONDS  # 0: every access token is expired when issued
    grants: Counter[str] = field(default_factory=Counter)
    clients: dict[str, OAuthClientInformationFull] = field(default_factory=dict)
    codes: dict[str, AuthorizationCode] = field(default_factory=dict)
    refresh_tokens: dict[str, RefreshToken] = field(default_factory=dict)
    access_tokens: dict[str, AccessToken] = field(default_factory=dict)
    # Set when a refresh token was exchanged (rotated); its answer waits for ``hold_refresh``.
    refresh_rotated: threading.Event = field(default_factory=threading.Event)
    hold_refresh: threading.Event | None = None

    def revoke_everything(self) -> None:
        self.refresh_tokens.clear()
        self.access_tokens.clear()

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        code = secrets.token_urlsafe(16)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        del self.codes[authorization_code.code]
        self.grants["authorization_code"] += 1
        return self._issue(authorization_code.client_id, authorization_code.scopes, None)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.refresh_tokens.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        del self.refresh_tokens[refresh_token.token]  # rotated: each refresh token works once
        self.grants["refresh_token"] += 1
        issued = self._issue(refresh_token.client_id, scopes or refresh_token.scopes, None)
        self.refresh_rotated.set()
        if self.hold_refresh is not None:
            await anyio.to_thread.run_sync(self.hold_refresh.wait)
        return issued

    async def load_access_token(self, token: str) -> AccessToken | None:
        return self.access_tokens.get(token)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access_tokens.pop(token.token, None)
        self.refresh_tokens.pop(token.token, None)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        expires_at = int(time.time()) + self.access_lifetime + 60  # the server is lenient
        self.access_tokens[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires_at
        )
        self.refresh_tokens[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes
        )
        return OAuthToken(
            access_token=access,
            expires_in=self.access_lifetime,
            refresh_token=refresh,
            scope=" ".join(scopes) or None,
        )


def protected_server(authority: Authority, base_url: str) -> MCPServer:
    with warnings.catch_warnings():  # validate_token_resource: this AS binds no resource
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        settings = AuthSettings(
            issuer_url=base_url,
            resource_server_url=f"{base_url}/mcp",
            client_registration_options=ClientRegistrationOptions(enabled=True),
            revocation_options=RevocationOptions(enabled=True),
            validate_token_resource=False,
        )
    server = MCPServer("protected", auth_server_provider=authority, auth=settings)

    @server.tool(description="Echo the text back.")
    def echo(text: str) -> str:
        return f"protected:{text}"

    return server


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().startup(sockets)
        finally:
            self.ready.set()


@contextmanager
def serve_protected(authority: Authority) -> Iterator[str]:
    """Yields the MCP endpoint URL; the authorization server lives at the same origin."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    base_url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    app = protected_server(authority, base_url).streamable_http_app()
    server = _Server(uvicorn.Config(app, log_config=None, access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        if not server.ready.wait(30) or not server.started:
            raise RuntimeError("the protected server did not start")
        yield f"{base_url}/mcp"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()
