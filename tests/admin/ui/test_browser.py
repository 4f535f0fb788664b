"""The admin UI in a real browser (Debian's Chromium via Playwright): sign in, the live queue,
approve and reject. Screenshots of the main pages land in ``test-artifacts/``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.support.browser import (
    DESKTOP,
    PHONE,
    chromium,
    new_page,
    screenshot_path,
    sign_in,
)
from tests.support.tool_loop import LoopStack, loop_stack_on

from .test_pages import start_turn


@pytest.fixture(scope="module")
def ui_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopStack]:
    """One backend is enough here (the HTTP tests cover both). Built before the browser starts:
    Playwright's sync API holds the thread's event loop while it runs."""
    with loop_stack_on(f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('db') / 'ui.db'}") as stack:
        yield stack


@pytest.fixture(scope="module")
def browser(ui_stack: LoopStack) -> Iterator[Browser]:
    with chromium() as running:
        yield running


@pytest.fixture
def page(browser: Browser, ui_stack: LoopStack) -> Iterator[Page]:
    with new_page(browser, ui_stack.gateway.url) as opened:
        yield opened


def test_an_admin_signs_in_and_sees_the_queue(
    page: Page, ui_stack: LoopStack, request: pytest.FixtureRequest
) -> None:
    page.goto("/admin")
    expect(page).to_have_url(f"{ui_stack.gateway.url}/admin/login")
    page.screenshot(path=screenshot_path("login"))
    sign_in(page, ui_stack.admin_key)
    expect(page).to_have_url(f"{ui_stack.gateway.url}/admin")
    expect(page.locator("h1")).to_have_text("Approval queue")
    expect(page.locator("#live-status")).to_have_text("live")
    expect(page.locator(".who")).to_have_text("reviewer")


def test_a_non_admin_key_cannot_sign_in(page: Page, ui_stack: LoopStack) -> None:
    sign_in(page, ui_stack.user_key)
    expect(page.locator(".banner.error")).to_have_text("That key does not have the admin role.")
    page.goto("/admin")
    expect(page).to_have_url(f"{ui_stack.gateway.url}/admin/login")


def test_a_new_call_appears_live_and_approving_it_completes_the_conversation(
    page: Page, ui_stack: LoopStack
) -> None:
    sign_in(page, ui_stack.admin_key)
    expect(page.locator("#live-status")).to_have_text("live")
    conversation_id, record_id = start_turn(ui_stack, "injected")

    card = page.locator(f"#call-{record_id}")
    expect(card).to_be_visible()  # arrived over SSE: the page was not reloaded
    expect(card.locator("h2")).to_have_text("transfer_money")
    expect(card.locator(".args")).to_contain_text('"amount": 999')
    expect(card.locator(".provenance")).to_contain_text("read_email")
    expect(card.locator('[data-role="time-left"]')).to_contain_text("left")
    page.screenshot(path=screenshot_path("queue-desktop"), full_page=True)
    page.set_viewport_size(PHONE)
    page.screenshot(path=screenshot_path("queue-phone"), full_page=True)
    page.set_viewport_size(DESKTOP)

    card.locator('[data-role="approve"]').click()
    expect(page.locator(".banner.ok")).to_contain_text("Approved")
    expect(page.locator(f"#call-{record_id}")).to_have_count(0)
    with ui_stack.client(ui_stack.user_key) as user:
        # The events stream ends when the resumed turn has finished.
        with user.stream("GET", f"/v1/conversations/{conversation_id}/events") as events:
            assert 'data: {"status":"completed"}' in list(events.iter_lines())
        final = user.get(f"/v1/conversations/{conversation_id}").json()
    assert final["messages"][-1]["content"] == "Finished: transferred"


def test_rejecting_with_a_reason(page: Page, ui_stack: LoopStack) -> None:
    conversation_id, record_id = start_turn(ui_stack, "loop")
    sign_in(page, ui_stack.admin_key)
    card = page.locator(f"#call-{record_id}")
    card.locator(".reject input[name=reason]").fill("amount not agreed with finance")
    card.locator('[data-role="reject"]').click()
    expect(page.locator(".banner.ok")).to_contain_text("Rejected")
    expect(page.locator("table").first).to_contain_text("amount not agreed with finance")
    with ui_stack.client(ui_stack.user_key) as user:
        with user.stream("GET", f"/v1/conversations/{conversation_id}/events") as events:
            list(events.iter_lines())
        final = user.get(f"/v1/conversations/{conversation_id}").json()
    assert "amount not agreed with finance" in final["messages"][-1]["content"]


def test_the_other_pages_render_at_desktop_and_phone_width(page: Page, ui_stack: LoopStack) -> None:
    sign_in(page, ui_stack.admin_key)
    for name, heading in [
        ("keys", "API keys"),
        ("audit", "Audit log"),
        ("usage", "Usage and spend"),
        ("models", "Models"),
        ("tools", "Tools"),
        ("servers", "Tool servers"),
        ("reviews", "Tool definitions to review"),
    ]:
        page.set_viewport_size(DESKTOP)
        page.goto(f"/admin/{name}")
        expect(page.locator("h1").first).to_have_text(heading)
        page.screenshot(path=screenshot_path(name), full_page=True)
        page.set_viewport_size(PHONE)
        page.screenshot(path=screenshot_path(f"{name}-phone"), full_page=True)
        # Tables become stacked cards on a phone: nothing scrolls sideways.
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], name
