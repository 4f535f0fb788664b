"""The client side of the official MCP conformance suite (``@modelcontextprotocol/conformance``).

The suite's client mode starts a scenario server and runs our command with the server's URL as the
last argument, the scenario's name in ``MCP_CONFORMANCE_SCENARIO`` and its data (credentials) as
JSON in ``MCP_CONFORMANCE_CONTEXT`` (the CLI reads them and calls ``run``). The gateway's own
catalog connects exactly as ``serve`` builds it from an ``MCPServerConfig``, lists the tools and
calls each with arguments made from its schema, playing the people a scenario needs: an
elicitation is accepted with the requested schema's defaults, and for ``auth/*`` scenarios the
authorization request is approved by following its redirect (the suite's authorization server
approves at once), as an administrator's browser would.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any, TextIO
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.auth.utils import build_protected_resource_metadata_discovery_urls
from mcp.shared.auth import AuthorizationCodeResult

from mcp_client.catalog import MCPToolCatalog
from mcp_client.config import (
    AuthorizationCodeAuth,
    CatalogSettings,
    ClientCredentialsAuth,
    IdentityAssertionAuth,
    MCPServerConfig,
    ServerAuth,
)
from mcp_client.hooks import CallHooks, InputAnswer, InputRequest
from mcp_client.types import StandardizedTool

SERVER = "conformance"
ROLE = "conformance"
# Where the authorization server sends the consent back. Nothing listens there: the code is read
# from the redirect itself, as the gateway's callback would read it.
REDIRECT_URI = "http://localhost:3000/callback"
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
_CLIENT_VARIABLE = "CONFORMANCE_CLIENT_CREDENTIAL"
_KEY_VARIABLE = "CONFORMANCE_PRIVATE_KEY"
_ID_TOKEN_VARIABLE = "CONFORMANCE_ID_TOKEN"  # noqa: S105 (a variable name)
_SAMPLE_VALUES: dict[str, Any] = {
    "string": "conformance",
    "integer": 1,
    "number": 1,
    "boolean": True,
    "array": [],
    "object": {},
}


def run(url: str, scenario: str, context: str | None = None, out: TextIO = sys.stdout) -> int:
    """Exit status for the suite: 0 when every step ran, 1 otherwise (the reason on stderr)."""
    data: dict[str, Any] = json.loads(context) if context else {}
    auth, environ = _auth(scenario, data, url) if scenario.startswith("auth/") else (None, {})
    config = MCPServerConfig(
        name=SERVER, transport="streamable_http", url=url, roles=[ROLE], auth=auth
    )
    return asyncio.run(_run(config, environ, out))


def _auth(scenario: str, context: dict[str, Any], url: str) -> tuple[ServerAuth, dict[str, str]]:
    """The server's ``auth`` as an operator would write it, with its secrets in "environment"."""
    client_id = context.get("client_id")
    if "idp_token_endpoint" in context:
        return _identity_assertion(context, url)
    if scenario.startswith("auth/client-credentials-"):
        if "private_key_pem" in context:
            jwt = ClientCredentialsAuth(
                type="client_credentials",
                client_id=str(client_id),
                client_auth="private_key_jwt",
                private_key_env=_KEY_VARIABLE,
                signing_algorithm=str(context.get("signing_algorithm", "RS256")),
            )
            return jwt, {_KEY_VARIABLE: str(context["private_key_pem"])}
        basic = ClientCredentialsAuth(
            type="client_credentials",
            client_id=str(client_id),
            client_auth="client_secret_basic",
            client_secret_env=_CLIENT_VARIABLE,
        )
        return basic, {_CLIENT_VARIABLE: str(context.get("client_secret", ""))}
    secret = context.get("client_secret")
    code = AuthorizationCodeAuth(
        type="authorization_code",
        redirect_uri=REDIRECT_URI,
        client_id=str(client_id) if client_id else None,
        client_secret_env=_CLIENT_VARIABLE if secret else None,
        client_metadata_url=CLIENT_METADATA_URL,
    )
    return code, {_CLIENT_VARIABLE: str(secret)} if secret else {}


def _identity_assertion(context: dict[str, Any], url: str) -> tuple[ServerAuth, dict[str, str]]:
    """SEP-990: the suite's IdP issued the ID token; the MCP authorization server's issuer is
    read from the server's protected resource metadata, as the operator writing the config would."""
    auth = IdentityAssertionAuth(
        type="identity_assertion",
        issuer=authorization_server_of(url),
        client_id=str(context["client_id"]),
        client_secret_env=_CLIENT_VARIABLE,
        idp_token_endpoint=str(context["idp_token_endpoint"]),
        idp_client_id=str(context["idp_client_id"]) if "idp_client_id" in context else None,
        id_token_env=_ID_TOKEN_VARIABLE,
    )
    secrets = {
        _CLIENT_VARIABLE: str(context["client_secret"]),
        _ID_TOKEN_VARIABLE: str(context["idp_id_token"]),
    }
    return auth, secrets


def authorization_server_of(url: str) -> str:
    """The first authorization server the resource's metadata (RFC 9728) names, as written there
    (an issuer is compared as a plain string: a parsed URL could gain a "/")."""
    with httpx2.Client(timeout=30) as client:
        for candidate in build_protected_resource_metadata_discovery_urls(None, url):
            response = client.get(candidate)
            if response.status_code == 200:
                servers = response.json().get("authorization_servers") or []
                if servers and isinstance(servers[0], str):
                    return servers[0]
    raise RuntimeError(f"no protected resource metadata for {url}")


async def follow_the_redirect(authorization_url: str) -> AuthorizationCodeResult:
    """Consent as the suite's authorization server expects it: it approves at once and redirects
    to the callback with the code; the code is read from that redirect."""
    async with httpx2.AsyncClient() as client:
        response = await client.get(authorization_url, follow_redirects=False)
    location = response.headers.get("location")
    if not response.is_redirect or not location:
        raise RuntimeError(f"the authorization server answered {response.status_code}, no redirect")
    query = parse_qs(urlsplit(location).query)
    if "code" not in query:
        raise RuntimeError(f"the redirect carries no code: {query.get('error', ['?'])[0]}")
    state, issuer = query.get("state"), query.get("iss")
    return AuthorizationCodeResult(
        code=query["code"][0],
        state=state[0] if state else None,
        iss=issuer[0] if issuer else None,
    )


async def _run(config: MCPServerConfig, environ: dict[str, str], out: TextIO) -> int:
    # Generous: a loaded CI machine runs the OAuth discovery, registration and consent in here.
    settings = CatalogSettings(discovery_timeout=60, call_timeout=60)
    catalog = MCPToolCatalog.from_config([config], settings, environ, consent=follow_the_redirect)
    await catalog.start()
    try:
        status = catalog.status()[SERVER]
        if status.state != "ready":
            print(f"could not connect: {status.reason}", file=sys.stderr)
            return 1
        hooks = CallHooks(on_input=accept_with_defaults)
        for tool in catalog.offered_to([ROLE]):
            result = await catalog.call_tool(tool.name, sample_arguments(tool), hooks=hooks)
            print(json.dumps({"tool": tool.name, "result": result.content}), file=out)
    finally:
        await catalog.aclose()
    return 0


def sample_arguments(tool: StandardizedTool) -> dict[str, Any]:
    """A value of the right type for every required argument (its default where it has one)."""
    properties = tool.parameters.get("properties") or {}
    arguments: dict[str, Any] = {}
    for name in tool.parameters.get("required") or []:
        schema = properties.get(name) or {}
        if "default" in schema:
            arguments[name] = schema["default"]
        elif schema.get("enum"):
            arguments[name] = schema["enum"][0]
        else:
            arguments[name] = _SAMPLE_VALUES.get(str(schema.get("type")), "conformance")
    return arguments


async def accept_with_defaults(request: InputRequest) -> InputAnswer:
    """The user of the scenario: accepts, filling each field the schema gives a default for."""
    if request.mode != "form":
        return InputAnswer(action="decline")
    properties = request.requested_schema.get("properties") or {}
    content = {
        name: schema["default"]
        for name, schema in properties.items()
        if isinstance(schema, dict) and "default" in schema
    }
    return InputAnswer(action="accept", content=content)
