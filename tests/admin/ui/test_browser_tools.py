"""Editing a tool's policy from the Tools page in a real browser, and seeing it in the API."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.support.browser import (
    PHONE,
    chromium,
    new_page,
    no_sideways_scroll,
    screenshot_path,
    sign_in,
)
from tests.support.tool_loop import LoopStack, loop_stack_on


@pytest.fixture(scope="module")
def ui_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopStack]:
    # Built before the browser starts: Playwright's sync API holds the thread's event loop.
    url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('db') / 'tools.db'}"
    with loop_stack_on(url) as stack:
        yield stack


@pytest.fixture(scope="module")
def browser(ui_stack: LoopStack) -> Iterator[Browser]:
    with chromium() as running:
        yield running


@pytest.fixture
def page(browser: Browser, ui_stack: LoopStack) -> Iterator[Page]:
    with new_page(browser, ui_stack.gateway.url) as opened:
        yield opened


def listed_policy(stack: LoopStack, tool: str) -> dict[str, Any]:
    with stack.client(stack.admin_key) as admin:
        tools = admin.get("/v1/admin/tools").json()["data"]
    [found] = [t for t in tools if t["name"] == tool]
    policy: dict[str, Any] = found["policy"]
    return policy


def test_an_admin_edits_a_tools_roles_and_approval(page: Page, ui_stack: LoopStack) -> None:
    assert listed_policy(ui_stack, "get_time")["requires_approval"] is False
    sign_in(page, ui_stack.admin_key)
    page.goto("/admin/tools")
    row = page.locator("#tool-get_time")
    row.locator("details.edit summary").click()
    row.locator("input[name=roles]").fill("user, analyst")
    row.locator("select[name=requires_approval]").select_option("true")
    page.screenshot(path=screenshot_path("tools-edit-desktop"), full_page=True)
    row.locator('[data-role="save-policy"]').click()

    expect(page.locator(".banner.ok")).to_contain_text("Policy saved")
    expect(row.locator('[data-role="approval"]')).to_have_text("requires approval")
    expect(row.locator('[data-role="roles"]')).to_have_text("analyst, user")
    expect(row.locator(".pill", has_text="set by an admin")).to_be_visible()
    policy = listed_policy(ui_stack, "get_time")
    assert policy["requires_approval"] is True
    assert policy["roles"] == ["analyst", "user"]
    # Only what was edited is stored: `enabled` still follows the config file.
    assert policy["admin_override"] == {
        "enabled": None,
        "roles": ["analyst", "user"],
        "requires_approval": True,
        "approval_rules": None,
        "guardrails": None,
    }

    row.locator("details.edit summary").click()
    page.once("dialog", lambda dialog: dialog.accept())
    row.locator('[data-role="reset-policy"]').click()
    expect(page.locator(".banner.ok")).to_contain_text("follows the config file again")
    expect(row.locator(".pill", has_text="set by an admin")).to_have_count(0)
    policy = listed_policy(ui_stack, "get_time")
    assert policy["requires_approval"] is False
    assert set(policy["admin_override"].values()) == {None}


def test_a_bad_role_is_shown_on_the_page_and_nothing_changes(
    page: Page, ui_stack: LoopStack
) -> None:
    sign_in(page, ui_stack.admin_key)
    page.goto("/admin/tools")
    row = page.locator("#tool-read_email")
    row.locator("details.edit summary").click()
    row.locator("input[name=roles]").fill("Finance Team")
    row.locator('[data-role="save-policy"]').click()
    banner = page.locator(".banner.error")
    expect(banner).to_contain_text("Roles must be lowercase words")
    expect(banner.locator("code").first).to_have_text("read_email")
    # The form stays open with what was typed, to be corrected.
    expect(row.locator("input[name=roles]")).to_have_value("Finance Team")
    assert listed_policy(ui_stack, "read_email")["roles"] == ["user"]
    page.screenshot(path=screenshot_path("tools-error-desktop"), full_page=True)
    page.set_viewport_size(PHONE)
    page.goto("/admin/tools")
    page.screenshot(path=screenshot_path("tools-phone"), full_page=True)
    assert no_sideways_scroll(page)
