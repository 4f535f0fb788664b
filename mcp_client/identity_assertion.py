"""Enterprise-managed authorization (SEP-990) for HTTP tool servers.

Leg 2 (the ID-JAG for an access token at the MCP authorization server, RFC 7523 jwt-bearer) is the
mcp SDK's ``IdentityAssertionOAuthProvider``. Leg 1, which the SDK leaves to the deployment, is
here: the ID token is exchanged at the enterprise IdP's token endpoint for an ID-JAG (RFC 8693)
whose audience is the configured issuer and whose resource is the MCP server.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from urllib.parse import quote

import anyio
import httpx2
from mcp.client.auth import OAuthTokenError, TokenStorage
from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider

from mcp_client.config import IdentityAssertionAuth
from mcp_client.oauth_common import oauth_error, secret_of

TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"  # noqa: S105 (a URN)
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"  # noqa: S105 (a URN)
ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag"
_EXCHANGE_TIMEOUT = 30.0


def identity_assertion_auth(
    url: str, auth: IdentityAssertionAuth, environ: Mapping[str, str], storage: TokenStorage
) -> httpx2.Auth:
    return IdentityAssertionOAuthProvider(
        url,
        storage,
        auth.client_id,
        secret_of(environ, auth.client_secret_env, "client secret"),
        issuer=auth.issuer,  # compared with the metadata's as a plain string (RFC 8414 3.3)
        assertion_provider=IdJagExchange(auth, environ),
        scope=" ".join(auth.scopes) or None,
        token_endpoint_auth_method=auth.client_auth,
    )


class IdJagExchange:
    """The SDK's ``assertion_provider``: (audience, resource) -> an ID-JAG from the IdP."""

    def __init__(self, auth: IdentityAssertionAuth, environ: Mapping[str, str]) -> None:
        self._endpoint = auth.idp_token_endpoint
        self._client_id = auth.idp_client_id
        variable = auth.idp_client_secret_env
        self._secret = secret_of(environ, variable, "IdP client secret") if variable else None
        named = auth.id_token_env
        self._id_token = secret_of(environ, named, "ID token") if named else None
        self._id_token_file = auth.id_token_file

    async def __call__(self, audience: str, resource: str) -> str:
        data = {
            "grant_type": TOKEN_EXCHANGE_GRANT,
            "requested_token_type": ID_JAG_TYPE,
            "subject_token": await self._subject_token(),
            "subject_token_type": ID_TOKEN_TYPE,
            "audience": audience,
            "resource": resource,
        }
        headers = {}
        if self._secret is not None and self._client_id is not None:
            # RFC 6749 2.3.1: each part form-encoded before the pair is base64'd.
            pair = f"{quote(self._client_id, safe='')}:{quote(self._secret, safe='')}"
            headers["Authorization"] = f"Basic {base64.b64encode(pair.encode()).decode()}"
        elif self._client_id is not None:
            data["client_id"] = self._client_id
        async with httpx2.AsyncClient(timeout=_EXCHANGE_TIMEOUT) as client:
            response = await client.post(self._endpoint, data=data, headers=headers)
        if response.status_code != 200:
            refusal = oauth_error(response)
            raise OAuthTokenError(f"the identity provider refused the token exchange: {refusal}")
        return _id_jag(response)

    async def _subject_token(self) -> str:
        if self._id_token is not None:
            return self._id_token
        assert self._id_token_file is not None  # the config validator requires one source
        try:
            token = (await anyio.Path(self._id_token_file).read_text()).strip()
        except OSError as exc:
            raise OAuthTokenError(f"the ID token file cannot be read ({exc.strerror})") from None
        if not token:
            raise OAuthTokenError("the ID token file is empty")
        return token


def _id_jag(response: httpx2.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict) or not isinstance(body.get("access_token"), str):
        raise OAuthTokenError("the identity provider's token exchange answer carries no token")
    if body.get("issued_token_type") != ID_JAG_TYPE:
        raise OAuthTokenError(
            f"the identity provider issued {body.get('issued_token_type')!r}, not an ID-JAG"
        )
    token: str = body["access_token"]
    return token
