"""Connecting an authorization-code tool server from the Servers page, against a real
authorization server (the mcp SDK's, tests/support/oauth_mcp_server.py), through real gateways
sharing one database: the admin's browser is an HTTP client following every redirect."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from cryptography.fernet import Fernet
from sqlalchemy import select

from db.engine import create_engine, session_factory
from db.models import AuditEvent, MCPServerGrant
from tests.support.admin_ui import csrf_token, signed_in_client
from tests.support.databases import fresh_database
from tests.support.gateway import RunningGateway, create_key, running_gateway
from tests.support.oauth_mcp_server import Authority, serve_protected
from tests.support.waiting import eventually

SERVER = "protected"
CATALOG = {
    "ping_interval": 0.3,
    "retry_initial": 0.1,
    "retry_max": 0.5,
    "discovery_timeout": 20,
    "runtime_servers_refresh_seconds": 0.2,
}


@dataclass
class Connected:
    authority: Authority
    url: str
    key: str
    database_url: str
    first: RunningGateway
    admin_key: str
    stack: ExitStack

    def replica(self) -> RunningGateway:
        """Another gateway on the same database and key: a second replica."""
        return self.stack.enter_context(_gateway(self.database_url, self.url, self.key))


def _gateway(database_url: str, url: str, key: str, **values: Any) -> Any:
    server = {
        "name": SERVER,
        "transport": "streamable_http",
        "url": url,
        "roles": ["user"],
        "trusted": True,  # its tools are offered without a review
        "auth": {"type": "authorization_code"},
    }
    return running_gateway(
        database_url,
        mcp_servers=[server],
        tool_catalog=CATALOG,
        mcp_token_key=key,
        **values,
    )


@pytest.fixture(params=["sqlite", "postgresql"])
def setup(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Connected]:
    authority = Authority()
    key = Fernet.generate_key().decode()
    with ExitStack() as stack:
        database_url = stack.enter_context(
            fresh_database(request.param, tmp_path_factory.mktemp("db"))
        )
        url = stack.enter_context(serve_protected(authority))
        first = stack.enter_context(_gateway(database_url, url, key))
        admin_key = first.create_key("ops", ["admin"])
        yield Connected(authority, url, key, database_url, first, admin_key, stack)


@functools.cache
def _readyz_key(database_url: str) -> str:
    return create_key(database_url, "readyz", ["admin"])  # /readyz details are admin-only


def _server(gateway: RunningGateway) -> dict[str, Any]:
    headers = {"authorization": f"Bearer {_readyz_key(gateway.database_url)}"}
    ready = httpx.get(f"{gateway.url}/readyz", headers=headers).json()
    servers: dict[str, Any] = ready["tool_servers"]
    return dict(servers[SERVER])


def _connect(gateway: RunningGateway, admin_key: str) -> httpx.Response:
    """The admin clicks Connect; the browser follows the authorization server's redirect back."""
    with signed_in_client(gateway.url, admin_key) as browser:
        page = browser.get("/admin/servers")
        assert 'data-role="connect-server"' in page.text
        onward = browser.post(
            f"/admin/servers/{SERVER}/connect", data={"csrf_token": csrf_token(page.text)}
        )
        assert onward.status_code == 200, onward.text
        # The page moves on to the authorization server by its Refresh header, as a browser does.
        authorization_url = onward.headers["refresh"].removeprefix("0; url=")
        return browser.get(authorization_url, follow_redirects=True)


def _rows(database_url: str) -> tuple[list[MCPServerGrant], list[AuditEvent]]:
    async def read() -> tuple[list[MCPServerGrant], list[AuditEvent]]:
        engine = create_engine(database_url)
        try:
            async with session_factory(engine)() as session:
                grants = list(await session.scalars(select(MCPServerGrant)))
                audit = list(
                    await session.scalars(
                        select(AuditEvent).where(AuditEvent.action == "server.connected")
                    )
                )
                return grants, audit
        finally:
            await engine.dispose()

    return asyncio.run(read())


def test_an_admin_connects_the_server_and_every_replica_uses_the_sealed_tokens(
    setup: Connected,
) -> None:
    before = _server(setup.first)
    assert before["state"] == "degraded"
    assert before["reason"] == "authorization required: an administrator must connect this server"

    answer = _connect(setup.first, setup.admin_key)

    assert answer.status_code == 200, answer.text
    assert answer.url.path == "/admin/oauth/callback"
    assert "Server connected" in answer.text
    assert answer.headers["refresh"] == "0; url=/admin/servers?done=connected"
    assert _server(setup.first)["state"] == "ready"
    assert setup.authority.grants["authorization_code"] == 1

    grants, audit = _rows(setup.database_url)
    (row,) = grants
    issued = [*setup.authority.access_tokens, *setup.authority.refresh_tokens]
    client_ids = list(setup.authority.clients)
    stored = " ".join(str(value) for value in vars(row).values())
    for secret in [*issued, *client_ids]:
        assert secret not in stored  # sealed: no token (nor the client) is readable in the row
    assert row.tokens_sealed
    assert row.client_sealed
    (event,) = audit
    assert event.detail["server"] == SERVER
    assert event.actor_key_id is not None

    second = setup.replica()
    assert _server(second)["state"] == "ready"  # the stored tokens, no consent asked
    assert setup.authority.grants["authorization_code"] == 1
    with httpx.Client(base_url=second.url) as client:
        user = second.create_key("user", ["user"])
        tools = client.get("/v1/tools", headers={"authorization": f"Bearer {user}"}).json()
    assert [tool["name"] for tool in tools["data"]] == ["echo"]


def test_revocation_degrades_every_replica_with_the_reason_until_reconnected(
    setup: Connected,
) -> None:
    assert _connect(setup.first, setup.admin_key).status_code == 200
    second = setup.replica()
    assert _server(second)["state"] == "ready"

    setup.authority.revoke_everything()

    refused = "token refresh failed: invalid_grant (HTTP 400)"
    for replica in (setup.first, second):
        # A ping may see the revoked token's 401 before the refresh is refused: the server is
        # degraded with that reason first, then with the refusal's.
        eventually(
            lambda r=replica: (
                _server(r)["state"] == "degraded" and _server(r)["reason"].startswith(refused)
            ),
            "the grant is refused",
        )
        assert _server(replica)["reason"].endswith("reconnect the server in the admin UI")
    with signed_in_client(setup.first.url, setup.admin_key) as browser:
        page = browser.get("/admin/servers").text
    assert "Reconnect" in page
    assert "token refresh failed" in page

    assert _connect(second, setup.admin_key).status_code == 200  # from the other replica

    for replica in (second, setup.first):
        eventually(lambda r=replica: _server(r)["state"] == "ready", "reconnected everywhere")
    assert setup.authority.grants["authorization_code"] == 2


def test_a_token_that_expired_is_refreshed_before_use(setup: Connected) -> None:
    setup.authority.access_lifetime = 0  # every access token is expired when issued
    assert _connect(setup.first, setup.admin_key).status_code == 200

    eventually(lambda: setup.authority.grants["refresh_token"] >= 2, "pings refresh the token")
    assert _server(setup.first)["state"] == "ready"
    assert setup.authority.grants["authorization_code"] == 1


def test_a_callback_without_the_browser_that_began_it_is_refused(setup: Connected) -> None:
    with httpx.Client(base_url=setup.first.url) as stranger:
        answer = stranger.get("/admin/oauth/callback", params={"state": "x", "code": "y"})
    assert answer.status_code == 400
    assert "Connect again" in answer.text
    assert setup.authority.grants["authorization_code"] == 0


def test_a_server_added_at_run_time_takes_auth_and_is_connected_the_same_way(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    authority = Authority()
    key = Fernet.generate_key().decode()
    with (
        fresh_database("sqlite", tmp_path_factory.mktemp("db")) as database_url,
        serve_protected(authority) as url,
        running_gateway(
            database_url,
            tool_catalog={**CATALOG, "http_allow_list": [url.removesuffix("/mcp")]},
            mcp_token_key=key,
        ) as gateway,
    ):
        admin_key = gateway.create_key("ops", ["admin"])
        api = httpx.Client(
            base_url=gateway.url, headers={"authorization": f"Bearer {admin_key}"}, timeout=30
        )
        server = {
            "name": SERVER,
            "transport": "streamable_http",
            "url": url,
            "auth": {"type": "authorization_code"},
        }
        with api:
            refused = api.post(
                "/v1/admin/servers",
                json={
                    **server,
                    "auth": {
                        "type": "client_credentials",
                        "client_id": "x",
                        "client_secret_env": "GATEWAY_ADMIN_KEY",
                    },
                },
            )
            assert refused.status_code == 400
            assert refused.json()["error"]["param"] == "auth"

            with signed_in_client(gateway.url, admin_key) as browser:
                page = browser.get("/admin/servers").text
                form = {
                    "name": SERVER,
                    "transport": "streamable_http",
                    "url": url,
                    "roles": "user",
                    "oauth": "true",
                    "scopes": "",
                    "csrf_token": csrf_token(page),
                }
                added = browser.post("/admin/servers", data=form)
                assert added.status_code == 303, added.text
            stored = api.get("/v1/admin/servers").json()["data"]
            assert [s for s in stored if s["name"] == SERVER]
            assert _server(gateway)["reason"] == (
                "authorization required: an administrator must connect this server"
            )

            assert _connect(gateway, admin_key).status_code == 200

            assert _server(gateway)["state"] == "ready"
            assert api.delete(f"/v1/admin/servers/{SERVER}").status_code in (200, 204)
        grants, _ = _rows(database_url)
        assert grants == []  # removing the server forgets its grant
