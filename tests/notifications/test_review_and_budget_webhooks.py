"""Tool reviews and budget alerts reach the webhooks too: signed, once, with what to act on."""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

import httpx

from tests.notifications.test_webhooks import SECRET, _all_delivered, _assert_signed
from tests.support.gateway import running_gateway
from tests.support.servers import serve
from tests.support.tool_loop import MODELS, make_catalog
from tests.support.waiting import eventually
from tests.support.webhook_receiver import WebhookReceiver

PRICED_MOCK = [
    {"name": "mock", "provider": "mock", "price": {"input_per_1k": 100, "output_per_1k": 100}}
]


def _hooks(url: str, events: list[str], **more: Any) -> dict[str, Any]:
    return {
        "webhooks": [
            {"name": "ops", "url": f"{url}/ops", "events": events, "secret_env": "HOOK_SECRET"},
            {"name": "chat", "url": f"{url}/chat", "events": events, "format": "slack"},
        ],
        "admin_url": "https://gateway.example/admin",
        "poll_seconds": 0.05,
        **more,
    }


def test_each_definition_held_for_review_is_announced_once_across_two_replicas(
    database_url: str,
) -> None:
    receiver = WebhookReceiver()
    with serve(receiver.app()) as hooks, ExitStack() as stack:
        for _ in range(2):
            stack.enter_context(
                running_gateway(
                    database_url,
                    {"HOOK_SECRET": SECRET},
                    tools=make_catalog(),
                    models=MODELS,
                    tool_pinning={"refresh_seconds": 0.1},  # both replicas keep looking
                    notifications=_hooks(hooks, ["tool.review_requested"]),
                )
            )
        received = receiver.wait_for("ops", "tool.review_requested", count=4)
        [slack, *_] = receiver.wait_for("chat", "tool.review_requested", count=4)
        eventually(lambda: _all_delivered(database_url, 8), "every review is delivered")

    assert len(receiver.received) == 8  # four tools, two webhooks, once each
    tools = sorted(r.json["tool"]["name"] for r in received)
    assert tools == ["admin_only", "get_time", "read_email", "transfer_money"]
    for review in received:
        _assert_signed(review)
        assert review.json["event"] == "tool.review_requested"
        assert review.json["tool"]["server"] == "local"
        assert review.json["tool"]["admin_url"] == "https://gateway.example/admin/reviews"
        assert len(review.json["tool"]["definition_hash"]) == 64
    assert "*Tool review requested*" in slack.json["text"]
    assert "<https://gateway.example/admin/reviews|Review it>" in slack.json["text"]


def test_budget_alerts_at_80_and_100_percent_are_sent(database_url: str) -> None:
    receiver = WebhookReceiver()
    with (
        serve(receiver.app()) as hooks,
        running_gateway(
            database_url,
            {"HOOK_SECRET": SECRET},
            models=PRICED_MOCK,
            notifications=_hooks(hooks, ["budget.threshold"]),
        ) as gateway,
    ):
        admin = {"authorization": f"Bearer {gateway.create_key('ops', ['admin'])}"}
        user = {"authorization": f"Bearer {gateway.create_key('search-bot', ['user'])}"}
        put = httpx.put(
            f"{gateway.v1}/admin/teams/search", json={"budget_per_day": 10}, headers=admin
        )
        assert put.status_code == 200, put.text
        patch = httpx.patch(f"{gateway.v1}/admin/keys/2", json={"team": "search"}, headers=admin)
        assert patch.status_code == 200, patch.text
        body = {"model": "mock", "messages": [{"role": "user", "content": "x" * 40}]}
        calls = 0
        while httpx.post(f"{gateway.v1}/chat/completions", json=body, headers=user).is_success:
            calls += 1
            assert calls < 20, "the budget never ran out"
        alerts = receiver.wait_for("ops", "budget.threshold", count=2)
        slack = receiver.wait_for("chat", "budget.threshold", count=2)

    assert sorted(a.json["budget"]["threshold"] for a in alerts) == [0.8, 1.0]
    for alert in alerts:
        _assert_signed(alert)
        budget = alert.json["budget"]
        assert (budget["scope"], budget["subject"], budget["period"]) == ("team", "search", "day")
        assert budget["budget_usd"] == 10
        assert budget["spent_usd"] >= budget["threshold"] * 10
    texts = sorted(s.json["text"] for s in slack)
    assert texts[0].startswith("*Budget 100% reached*: team `search` spent")
    assert texts[1].startswith("*Budget 80% reached*: team `search` spent")
