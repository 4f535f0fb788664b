"""The approval card says what the call will do, in a real browser; approve carries a comment;
the card links to the conversation's full transcript."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.support.browser import chromium, new_page, screenshot_path, sign_in
from tests.support.gateway import running_gateway
from tests.support.tool_catalog import CountingCatalog, constant
from tests.support.tool_loop import TRUSTED_LOCAL_TOOLS, LoopStack

from .test_pages import start_turn

DEPLOY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "service": {"type": "string", "enum": ["api", "web"], "description": "what to deploy"},
        "region": {"type": "string", "default": "eu-west-1"},
        "dry_run": {"type": "boolean", "default": True},
    },
    "required": ["service"],
}
MODELS = [
    {
        "name": "deployer",
        "provider": "mock",
        "script": [
            {"tool_calls": [{"name": "deploy", "arguments": {"service": "api"}}]},
            {"text": "Deployed: {last_tool_result}"},
        ],
    }
]


@pytest.fixture(scope="module")
def card_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopStack]:
    catalog = CountingCatalog()
    catalog.add(
        "deploy",
        constant("deployed"),
        parameters=DEPLOY_SCHEMA,
        requires_approval=True,
        description="Deploys a service to production.",
        annotations={"destructiveHint": True, "openWorldHint": True},
    )
    database_url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('db') / 'card.db'}"
    with running_gateway(
        database_url, tools=catalog, tool_pinning=TRUSTED_LOCAL_TOOLS, models=MODELS
    ) as gateway:
        yield LoopStack(
            gateway,
            catalog,
            user_key=gateway.create_key("release-bot", ["user", "deployer"]),
            admin_key=gateway.create_key("reviewer", ["admin"]),
            other_admin_key=gateway.create_key("reviewer-2", ["admin"]),
        )


@pytest.fixture(scope="module")
def browser(card_stack: LoopStack) -> Iterator[Browser]:
    with chromium() as running:
        yield running


@pytest.fixture
def page(browser: Browser, card_stack: LoopStack) -> Iterator[Page]:
    with new_page(browser, card_stack.gateway.url) as opened:
        yield opened


def test_the_card_explains_the_call_and_approve_takes_a_comment(
    page: Page, card_stack: LoopStack
) -> None:
    # One earlier decision on this tool, so the card has a history to show.
    _, earlier = start_turn(card_stack, "deployer")
    with card_stack.client(card_stack.other_admin_key) as admin:
        assert admin.post(f"/v1/admin/approvals/{earlier}/approve", json={}).status_code == 200
    conversation_id, call_id = start_turn(card_stack, "deployer")

    sign_in(page, card_stack.admin_key)
    card = page.locator(f"#call-{call_id}")
    expect(card.locator('[data-role="model"]')).to_have_text("model: deployer")
    expect(card.locator('[data-role="requester"]')).to_have_text(
        "requested by release-bot (owner release-bot; roles deployer, user)"
    )
    expect(card.locator(".tool-description")).to_have_text("Deploys a service to production.")
    expect(card.locator('[data-role="hint"]')).to_have_text(
        ["destructive", "open world (reaches outside systems)"]
    )
    expect(card.locator('[data-role="decisions"]')).to_have_text(
        "Last 30 days: approved 1, rejected 0."
    )
    service = card.locator('[data-arg="service"]')
    expect(service).to_contain_text('"api"')
    expect(service).to_contain_text('one of "api", "web"')
    expect(card.locator('[data-arg="region"]')).to_contain_text('default "eu-west-1"')
    expect(card.locator('[data-arg="dry_run"]')).to_contain_text("default true")
    page.screenshot(path=screenshot_path("approval-card"), full_page=True)

    card.locator('[data-role="comment"]').fill("checked with the on-call")
    card.locator('[data-role="approve"]').click()
    expect(page.locator(".banner")).to_contain_text("Approved")
    with card_stack.client(card_stack.user_key) as client:
        calls = client.get(f"/v1/conversations/{conversation_id}").json()["tool_calls"]
    assert calls[0]["decision_reason"] == "checked with the on-call"

    page.goto(f"/admin/conversations/{conversation_id}")
    expect(page.locator("h1")).to_contain_text(conversation_id[:8])
    call = page.locator('[data-role="tool-call"][data-tool="deploy"]')
    expect(call).to_contain_text('"service": "api"')
    expect(call).to_contain_text("checked with the on-call")
    expect(page.locator(".msg.user")).to_contain_text("go")


def test_the_card_links_to_the_transcript(page: Page, card_stack: LoopStack) -> None:
    conversation_id, call_id = start_turn(card_stack, "deployer")
    sign_in(page, card_stack.admin_key)
    page.locator(f'#call-{call_id} [data-role="transcript"]').click()
    expect(page).to_have_url(f"{card_stack.gateway.url}/admin/conversations/{conversation_id}")
    expect(page.locator('[data-role="message"]')).to_have_count(2)  # user, assistant's call
    expect(page.locator(".state-awaiting_approval")).to_have_text("awaiting_approval")


def test_a_two_approver_card_counts_approvals_live(page: Page, card_stack: LoopStack) -> None:
    with card_stack.client(card_stack.admin_key) as admin:
        rules = {"approval_rules": {"approvers": 2}}
        assert admin.put("/v1/admin/tools/deploy/policy", json=rules).status_code == 200
    try:
        sign_in(page, card_stack.other_admin_key)
        _, call_id = start_turn(card_stack, "deployer")
        card = page.locator(f"#call-{call_id}")  # arrives through the live feed
        expect(card.locator('[data-role="approvals"]')).to_have_text("0 of 2 approvals")

        with card_stack.client(card_stack.admin_key) as admin:
            first = admin.post(f"/v1/admin/approvals/{call_id}/approve", json={})
        assert first.json()["state"] == "awaiting_approval"
        # The open page hears of the first approval without a reload.
        expect(card.locator('[data-role="approvals"]')).to_have_text(
            "1 of 2 approvals (approved by reviewer)"
        )
        page.screenshot(path=screenshot_path("approval-card-two-approvers"), full_page=True)
        card.locator('[data-role="approve"]').click()
        expect(page.locator(".banner")).to_contain_text("Approved: the call runs now")
    finally:
        with card_stack.client(card_stack.admin_key) as admin:
            admin.put("/v1/admin/tools/deploy/policy", json={"approval_rules": None})
