"""The Servers page in a real browser: a runtime stdio server added from the allow-list, changed
and removed; a server off the allow-list refused with its reason; config servers read-only."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.support.browser import (
    DESKTOP,
    PHONE,
    chromium,
    new_page,
    no_sideways_scroll,
    screenshot_path,
    sign_in,
)
from tests.support.gateway import RunningGateway, running_gateway
from tests.support.mcp_servers import manifest_app
from tests.support.servers import serve

# PyPI's mcp-server-time, which the gateway ships with; the only command line allowed here.
TIME_SERVER = "mcp-server-time --local-timezone UTC"
ALLOW_LIST = [TIME_SERVER.split()]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    # Built before the browser starts: Playwright's sync API holds the thread's event loop.
    url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('db') / 'servers.db'}"
    with (
        serve(manifest_app([])) as manifest_url,
        running_gateway(
            url,
            models=[{"name": "mock", "provider": "mock"}],
            mcp_servers=[
                {
                    "name": "weather",
                    "transport": "http_manifest",
                    "url": manifest_url,
                    "roles": ["user"],
                }
            ],
            tool_catalog={"stdio_allow_list": ALLOW_LIST, "discovery_timeout": 20},
        ) as running,
    ):
        yield running


@pytest.fixture(scope="module")
def admin_key(gateway: RunningGateway) -> str:
    return gateway.create_key("ops", ["admin"])


@pytest.fixture(scope="module")
def browser(admin_key: str) -> Iterator[Browser]:
    with chromium() as running:
        yield running


@pytest.fixture
def page(browser: Browser, gateway: RunningGateway, admin_key: str) -> Iterator[Page]:
    with new_page(browser, gateway.url) as signed_in:
        sign_in(signed_in, admin_key)
        expect(signed_in.locator(".who")).to_have_text("ops")
        signed_in.goto("/admin/servers")
        yield signed_in


def api_client(gateway: RunningGateway, key: str) -> httpx.Client:
    return httpx.Client(
        base_url=gateway.url, headers={"authorization": f"Bearer {key}"}, timeout=30
    )


def api_servers(gateway: RunningGateway, key: str) -> dict[str, dict[str, Any]]:
    with api_client(gateway, key) as admin:
        return {s["name"]: s for s in admin.get("/v1/admin/servers").json()["data"]}


def test_config_servers_are_listed_read_only(page: Page) -> None:
    row = page.locator("#server-weather")
    expect(row.locator(".state")).to_have_text("ready")
    expect(row).to_contain_text("config file (read-only)")
    expect(row.locator("details.edit")).to_have_count(0)


def test_an_admin_adds_changes_and_removes_a_runtime_server(
    page: Page, gateway: RunningGateway, admin_key: str
) -> None:
    form = page.locator("#add-server form")
    form.locator("input[name=name]").fill("clock")
    form.locator("select[name=transport]").select_option("stdio")
    expect(form.locator("input[name=url]")).to_be_hidden()  # only the fields stdio uses
    form.locator("input[name=command_line]").fill(TIME_SERVER)
    form.locator("input[name=roles]").fill("user, ops")
    form.locator('[data-role="add-server"]').click()

    expect(page.locator(".banner.ok")).to_contain_text("Server added")
    row = page.locator("#server-clock")
    expect(row.locator(".state")).to_have_text("ready")
    expect(row).to_contain_text("added at run time")
    expect(row.locator("code.target")).to_have_text(TIME_SERVER)
    assert api_servers(gateway, admin_key)["clock"]["state"] == "ready"
    page.screenshot(path=screenshot_path("servers-desktop"), full_page=True)
    page.set_viewport_size(PHONE)
    page.screenshot(path=screenshot_path("servers-phone"), full_page=True)
    assert no_sideways_scroll(page)
    page.set_viewport_size(DESKTOP)

    row.locator("details.edit summary").click()
    expect(row.locator("input[name=command_line]")).to_have_value(TIME_SERVER)
    page.screenshot(path=screenshot_path("servers-edit-desktop"), full_page=True)
    row.locator("select[name=requires_approval]").select_option("true")
    row.locator('[data-role="save-server"]').click()
    expect(page.locator(".banner.ok")).to_contain_text("Server changed")
    with api_client(gateway, admin_key) as admin:
        tools = {t["name"]: t for t in admin.get("/v1/admin/tools").json()["data"]}
    assert tools["convert_time"]["policy"]["requires_approval"] is True
    assert tools["convert_time"]["policy"]["roles"] == ["ops", "user"]

    row.locator("details.edit summary").click()
    page.once("dialog", lambda dialog: dialog.accept())
    row.locator('[data-role="remove-server"]').click()
    expect(page.locator(".banner.ok")).to_contain_text("Server removed")
    expect(page.locator("#server-clock")).to_have_count(0)
    assert "clock" not in api_servers(gateway, admin_key)


def test_a_server_off_the_allow_list_is_refused_with_its_reason(
    page: Page, gateway: RunningGateway, admin_key: str
) -> None:
    form = page.locator("#add-server form")
    form.locator("input[name=name]").fill("shell")
    form.locator("input[name=command_line]").fill("/bin/sh -c 'touch /tmp/pwned'")
    form.locator('[data-role="add-server"]').click()

    banner = page.locator(".banner.error")
    expect(banner).to_contain_text("is not on")
    expect(banner.locator("code").last).to_have_text("tool_catalog.stdio_allow_list")
    # What was typed stays in the form, to be corrected.
    expect(form.locator("input[name=command_line]")).to_have_value("/bin/sh -c 'touch /tmp/pwned'")
    expect(page.locator("#server-shell")).to_have_count(0)
    assert "shell" not in api_servers(gateway, admin_key)
    page.screenshot(path=screenshot_path("servers-refused-desktop"), full_page=True)
