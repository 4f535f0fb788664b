"""The spend pages in a real browser: usage with charts, tables and CSV; keys with their settings
edited from the page; models with availability, price source and the unpriced flag."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

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

MODELS = [
    {"name": "mock", "provider": "mock", "price": {"input_per_1k": 2, "output_per_1k": 4}},
    {"name": "mock-cheap", "provider": "mock", "fallbacks": ["mock"]},
    # An OpenAI-compatible server nobody prices, and whose key is not set: unavailable, unpriced.
    {"name": "in-house", "provider": "openai", "model": "acme-7b",
     "base_url": "http://127.0.0.1:9/v1", "api_key_env": "ABSENT_KEY"},
]  # fmt: skip


@dataclass
class SpendStack:
    gateway: RunningGateway
    admin: str


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SpendStack]:
    url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('db') / 'spend.db'}"
    with running_gateway(url, models=MODELS) as gateway:
        admin = gateway.create_key("ops", ["admin"])
        keys = {name: gateway.create_key(name, ["user"]) for name in ("search-bot", "ads-bot")}
        with httpx.Client(base_url=gateway.v1) as client:
            client.patch(
                "/admin/keys/2",
                json={"team": "search"},
                headers={"authorization": f"Bearer {admin}"},
            )
            for name, model, times in [("search-bot", "mock", 3), ("ads-bot", "mock-cheap", 2)]:
                for _ in range(times):
                    client.post(
                        "/chat/completions",
                        json={
                            "model": model,
                            "messages": [{"role": "user", "content": "hi " * 50}],
                        },
                        headers={"authorization": f"Bearer {keys[name]}"},
                    )
            _wait_for_rollups(client, admin, 5)
        yield SpendStack(gateway, admin)


def _wait_for_rollups(client: httpx.Client, admin: str, requests: int) -> None:
    deadline = time.monotonic() + 10  # usage is flushed about once a second
    while time.monotonic() < deadline:
        rows = client.get("/admin/usage", headers={"authorization": f"Bearer {admin}"}).json()
        if sum(row["requests"] for row in rows["data"]) >= requests:
            return
        time.sleep(0.1)
    raise AssertionError("usage never reached the rollups")


@pytest.fixture(scope="module")
def browser(stack: SpendStack) -> Iterator[Browser]:
    with chromium() as running:
        yield running


@pytest.fixture
def page(browser: Browser, stack: SpendStack) -> Iterator[Page]:
    with new_page(browser, stack.gateway.url) as opened:
        yield opened


def _shoot(page: Page, name: str) -> None:
    page.set_viewport_size(DESKTOP)
    page.screenshot(path=screenshot_path(name), full_page=True)
    page.set_viewport_size(PHONE)
    page.screenshot(path=screenshot_path(f"{name}-phone"), full_page=True)
    assert no_sideways_scroll(page), name
    page.set_viewport_size(DESKTOP)


def test_usage_page_charts_spend_with_tables_and_csv(page: Page, stack: SpendStack) -> None:
    sign_in(page, stack.admin)
    page.goto("/admin/usage?days=7")
    expect(page.locator("h1")).to_have_text("Usage and spend")
    assert page.locator("svg.chart").count() >= 4  # spend, requests, keys, teams (and models)
    keys = page.locator("section", has_text="Top keys by spend")
    expect(keys.locator("table")).to_contain_text("search-bot")
    expect(keys.locator("svg.chart title").first).to_contain_text("search-bot: $")
    teams = page.locator("section", has_text="Spend by team")
    expect(teams.locator("table")).to_contain_text("search")
    _shoot(page, "usage-spend")

    csv = page.request.get("/admin/usage.csv?days=7&by=key,model")
    assert csv.ok
    assert csv.headers["content-type"].startswith("text/csv")
    header, *lines = csv.text().strip().splitlines()
    assert header.startswith("period,key_id,key_name,model,requests")
    assert any("search-bot,mock,3" in line for line in lines)


def test_an_admin_edits_a_keys_settings_from_the_keys_page(page: Page, stack: SpendStack) -> None:
    sign_in(page, stack.admin)
    page.goto("/admin/keys")
    row = page.locator("#key-3")  # ads-bot
    expect(row).to_contain_text("ads-bot")
    expect(page.locator("#key-2")).to_contain_text("search")
    row.locator("details.edit summary").click()
    row.locator("input[name=team]").fill("ads")
    row.locator("input[name=models]").fill("mock-cheap")
    row.locator("input[name=budget_per_month]").fill("25")
    _shoot(page, "keys-edit")
    row.locator("button", has_text="Save").click()

    expect(page.locator("#key-3")).to_contain_text("budget per month: 25")
    expect(page.locator("#key-3")).to_contain_text("models: mock-cheap")
    with httpx.Client(base_url=stack.gateway.v1) as client:
        listed = client.get("/admin/keys", headers={"authorization": f"Bearer {stack.admin}"})
    [ads] = [key for key in listed.json()["data"] if key["id"] == 3]
    assert ads["team"] == "ads"
    assert ads["allowed_models"] == ["mock-cheap"]
    assert ads["limits"]["budget_per_month"] == 25

    row = page.locator("#key-3")
    row.locator("details.edit summary").click()
    row.locator("input[name=budget_per_day]").fill("lots")
    row.locator("button", has_text="Save").click()
    expect(page.locator(".banner.error")).to_contain_text("budget_per_day")


def test_models_page_shows_availability_price_source_and_the_unpriced(
    page: Page, stack: SpendStack
) -> None:
    sign_in(page, stack.admin)
    page.goto("/admin/models")
    expect(page.locator("h1")).to_have_text("Models")
    expect(page.locator(".banner.warn")).to_contain_text("in-house")
    rows = page.locator("tbody tr")
    mock, cheap, in_house = rows.nth(0), rows.nth(1), rows.nth(2)
    expect(mock).to_contain_text("config")
    expect(mock).to_contain_text("3 req")
    expect(mock).to_contain_text("closed")
    expect(cheap).to_contain_text("mock")  # its fallback, and its price source
    expect(in_house).to_contain_text("unavailable")
    expect(in_house).to_contain_text("ABSENT_KEY")
    expect(in_house).to_contain_text("unpriced")
    _shoot(page, "models")
