"""Connecting an OAuth tool server in a real browser: the admin signs in at ``localhost`` and the
authorization server lives at ``127.0.0.1``, another site, so the callback arrives without the
admin session's SameSite=Strict cookie, as it would in production."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cryptography.fernet import Fernet
from playwright.sync_api import expect

from tests.support.browser import chromium, new_page, screenshot_path, sign_in
from tests.support.gateway import RunningGateway, running_gateway
from tests.support.oauth_mcp_server import Authority, serve_protected


@pytest.fixture(scope="module")
def authority() -> Authority:
    return Authority()


@pytest.fixture(scope="module")
def gateway(
    tmp_path_factory: pytest.TempPathFactory, authority: Authority
) -> Iterator[RunningGateway]:
    url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('db') / 'connect.db'}"
    with (
        serve_protected(authority) as server_url,
        running_gateway(
            url,
            mcp_servers=[
                {
                    "name": "crm",
                    "transport": "streamable_http",
                    "url": server_url,
                    "roles": ["user"],
                    "trusted": True,
                    "auth": {"type": "authorization_code"},
                }
            ],
            tool_catalog={"discovery_timeout": 20, "retry_initial": 0.1, "retry_max": 0.5},
            mcp_token_key=Fernet.generate_key().decode(),
        ) as running,
    ):
        yield running


def test_the_admin_connects_a_server_and_returns_to_the_servers_page(
    gateway: RunningGateway, authority: Authority
) -> None:
    admin_key = gateway.create_key("ops", ["admin"])
    other_site = gateway.url.replace("127.0.0.1", "localhost")
    with chromium() as browser, new_page(browser, other_site) as page:
        sign_in(page, admin_key)
        expect(page.locator(".who")).to_have_text("ops")
        page.goto("/admin/servers")
        row = page.locator("#server-crm")
        expect(row.locator(".state")).to_have_text("degraded")
        expect(row.locator('[data-role="grant"]')).to_contain_text("Not connected yet")

        row.locator('[data-role="connect-server"]').click()

        # Authorization server, callback, then on to the Servers page, still signed in.
        expect(page.locator(".banner.ok")).to_contain_text("Server connected")
        assert page.url.startswith(f"{other_site}/admin/servers")
        row = page.locator("#server-crm")
        expect(row.locator(".state")).to_have_text("ready")
        expect(row.locator('[data-role="connect-server"]')).to_have_text("Reconnect")
        page.screenshot(path=screenshot_path("servers-connected"), full_page=True)
    assert authority.grants["authorization_code"] == 1
