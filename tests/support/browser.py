"""Debian's Chromium driven by Playwright, headless, with nothing downloaded.

``playwright install`` is never run: the browser is the system's ``/usr/bin/chromium``
(``make test`` installs it with apt-get when missing). Outside CI a missing browser skips the
browser tests; in CI (``CI=true``) it fails them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, ViewportSize, sync_playwright

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
DESKTOP: ViewportSize = {"width": 1280, "height": 900}
PHONE: ViewportSize = {"width": 390, "height": 844}
WAIT_MS = 10_000


@contextmanager
def chromium() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{CHROMIUM} is missing; `make test` installs it with apt-get")
        pytest.skip(f"{CHROMIUM} is missing (`apt-get install chromium`)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            browser.close()


def screenshot_path(name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS / f"{name}.png"


@contextmanager
def new_page(browser: Browser, base_url: str) -> Iterator[Page]:
    """A page in a fresh context (no cookies carried over), desktop-sized."""
    context = browser.new_context(base_url=base_url, viewport=DESKTOP)
    context.set_default_timeout(WAIT_MS)
    try:
        yield context.new_page()
    finally:
        context.close()


def sign_in(page: Page, key: str) -> None:
    page.goto("/admin/login")
    page.fill("#api_key", key)
    page.click("button[type=submit]")


def no_sideways_scroll(page: Page) -> bool:
    width: int = page.evaluate("document.documentElement.scrollWidth")
    return width <= page.viewport_size["width"] if page.viewport_size else False
