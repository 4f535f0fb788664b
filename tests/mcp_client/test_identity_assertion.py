"""Leg 1 of enterprise-managed authorization against a real IdP token endpoint on 127.0.0.1 (the
whole flow, both legs, runs in the conformance suite's auth/cross-app-access-complete-flow)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp.client.auth import OAuthTokenError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcp_client.config import IdentityAssertionAuth
from mcp_client.identity_assertion import ID_JAG_TYPE, IdJagExchange
from tests.support.servers import serve

GOOD_TOKEN = "id-token-1"


class _IdP:
    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], str | None]] = []

    async def token(self, request: Request) -> JSONResponse:
        form = {key: str(value) for key, value in (await request.form()).items()}
        self.requests.append((form, request.headers.get("authorization")))
        if form.get("subject_token") == "revoked":
            return JSONResponse(
                {"error": "invalid_grant", "error_description": "ID token revoked"}, 400
            )
        jag = f"jag-for-{form['subject_token']}"
        return JSONResponse(
            {"access_token": jag, "issued_token_type": ID_JAG_TYPE, "token_type": "N_A"}
        )


@pytest.fixture
def idp() -> Iterator[tuple[_IdP, str]]:
    state = _IdP()
    app = Starlette(routes=[Route("/token", state.token, methods=["POST"])])
    with serve(app) as url:
        yield state, f"{url}/token"


def _auth(endpoint: str, **fields: str) -> IdentityAssertionAuth:
    return IdentityAssertionAuth.model_validate(
        {
            "type": "identity_assertion",
            "issuer": "https://mcp-auth.example.com",
            "client_id": "gateway",
            "client_secret_env": "AS_SECRET",
            "idp_token_endpoint": endpoint,
            **fields,
        }
    )


async def test_the_id_token_is_exchanged_for_an_id_jag_and_a_rotated_file_is_followed(
    idp: tuple[_IdP, str], tmp_path: Path
) -> None:
    state, endpoint = idp
    token_file = tmp_path / "id-token"
    token_file.write_text(GOOD_TOKEN + "\n")
    auth = _auth(
        endpoint,
        idp_client_id="gw@idp",
        idp_client_secret_env="IDP_SECRET",
        id_token_file=str(token_file),
    )
    exchange = IdJagExchange(auth, {"IDP_SECRET": "s:cret"})

    assert await exchange("https://mcp-auth.example.com", "https://mcp.example.com/mcp") == (
        "jag-for-id-token-1"
    )
    token_file.write_text("id-token-2")
    assert await exchange("https://mcp-auth.example.com", "https://mcp.example.com/mcp") == (
        "jag-for-id-token-2"
    )

    form, authorization = state.requests[0]
    assert form == {
        "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
        "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
        "subject_token": GOOD_TOKEN,
        "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
        "audience": "https://mcp-auth.example.com",
        "resource": "https://mcp.example.com/mcp",
    }
    # RFC 6749 2.3.1: the client id and secret are form-encoded inside the basic credentials.
    assert authorization == "Basic " + base64.b64encode(b"gw%40idp:s%3Acret").decode()


async def test_a_refused_exchange_names_the_idps_error_and_never_the_token(
    idp: tuple[_IdP, str],
) -> None:
    state, endpoint = idp
    exchange = IdJagExchange(
        _auth(endpoint, idp_client_id="gw", id_token_env="ID_TOKEN"), {"ID_TOKEN": "revoked"}
    )

    with pytest.raises(OAuthTokenError) as refused:
        await exchange("https://mcp-auth.example.com", "https://mcp.example.com/mcp")

    assert str(refused.value) == (
        "the identity provider refused the token exchange: invalid_grant (HTTP 400): "
        "ID token revoked"
    )
    form, authorization = state.requests[0]
    assert form["client_id"] == "gw"  # a public client at the IdP names itself in the form
    assert authorization is None


async def test_a_missing_id_token_file_is_reported(idp: tuple[_IdP, str], tmp_path: Path) -> None:
    _, endpoint = idp
    exchange = IdJagExchange(_auth(endpoint, id_token_file=str(tmp_path / "absent")), {})

    with pytest.raises(OAuthTokenError, match="the ID token file cannot be read"):
        await exchange("https://mcp-auth.example.com", "https://mcp.example.com/mcp")
