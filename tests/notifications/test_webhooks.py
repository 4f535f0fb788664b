"""Approvers hear of approvals through signed webhooks, delivered once, retried until they land."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import httpx
from sqlalchemy import select

from db.engine import create_engine, session_factory
from db.models import WebhookDelivery
from tests.chat_service.test_tool_loop import decide, follow, pending_call, start
from tests.support.admin_ui import signed_in_client
from tests.support.databases import postgres_database
from tests.support.gateway import running_gateway
from tests.support.servers import serve
from tests.support.tool_loop import MODELS, TRUSTED_LOCAL_TOOLS, LoopStack, make_catalog
from tests.support.waiting import eventually
from tests.support.webhook_receiver import Received, WebhookReceiver

SECRET = "whsec-test-only"
APPROVAL_EVENTS = ["approval.requested", "approval.decided", "approval.expired"]


def _notifications(url: str, **settings: Any) -> dict[str, Any]:
    return {
        "webhooks": [
            {
                "name": "reviewers",
                "url": f"{url}/ok",
                "events": APPROVAL_EVENTS,
                "secret_env": "HOOK_SECRET",
            },
        ],
        "admin_url": "https://gateway.example/admin",
        "poll_seconds": 0.05,
        "retry_base_seconds": 0.05,
        **settings,
    }


@contextmanager
def replicas(
    database_url: str,
    notifications: dict[str, Any],
    count: int = 1,
    environ: dict[str, str] | None = None,
    **tool_loop: Any,
) -> Iterator[list[LoopStack]]:
    """``count`` gateways on one database, as replicas behind a load balancer."""
    loop = {
        "sweep_interval_seconds": 0.05,
        "follow_poll_seconds": 0.02,
        "approval_expiry_seconds": 60,
        **tool_loop,
    }
    with ExitStack() as stack:
        gateways = [
            stack.enter_context(
                running_gateway(
                    database_url,
                    {"HOOK_SECRET": SECRET, **(environ or {})},
                    tools=make_catalog(),
                    tool_pinning=TRUSTED_LOCAL_TOOLS,
                    models=MODELS,
                    tool_loop=loop,
                    notifications=notifications,
                )
            )
            for _ in range(count)
        ]
        first = gateways[0]
        keys = [first.create_key(n, r) for n, r in [("team", ["user"]), ("reviewer", ["admin"])]]
        yield [LoopStack(g, make_catalog(), keys[0], keys[1], keys[1]) for g in gateways]


def _assert_signed(received: Received) -> None:
    timestamp = received.headers["x-gateway-timestamp"]
    assert abs(time.time() - int(timestamp)) < 300  # a receiver refuses older ones: no replay
    expected = hmac.new(
        SECRET.encode(), timestamp.encode() + b"." + received.content, hashlib.sha256
    ).hexdigest()
    assert received.headers["x-gateway-signature"] == f"sha256={expected}"
    assert received.headers["x-gateway-delivery"] == received.json["id"]


async def _rows(database_url: str) -> list[WebhookDelivery]:
    engine = create_engine(database_url)
    try:
        async with session_factory(engine)() as session:
            return list(await session.scalars(select(WebhookDelivery)))
    finally:
        await engine.dispose()


def _all_delivered(database_url: str, count: int) -> bool:
    rows = asyncio.run(_rows(database_url))
    return len(rows) == count and all(row.status == "delivered" for row in rows)


def test_request_and_decision_arrive_signed_exactly_once_across_two_replicas() -> None:
    receiver = WebhookReceiver()
    with (
        postgres_database() as database_url,
        serve(receiver.app()) as hooks,
        replicas(database_url, _notifications(hooks), count=2) as (one, two),
    ):
        with one.client(one.admin_key) as admin:
            assert admin.patch("/v1/admin/keys/1", json={"team": "payments"}).status_code == 200
        conversation_id, turn = start(one, "loop")
        call = pending_call(turn)
        [requested] = receiver.wait_for("ok", "approval.requested")
        assert decide(two, call["record_id"], "approve", "fine").status_code == 200
        [decided] = receiver.wait_for("ok", "approval.decided")
        follow(one, conversation_id)
        # Both replicas poll the outbox all along; once every row is delivered nothing is left
        # for a second delivery.
        eventually(lambda: _all_delivered(database_url, 2), "both deliveries are done")

    assert len(receiver.received) == 2
    for received in (requested, decided):
        _assert_signed(received)
    body = requested.json
    assert body["event"] == "approval.requested"
    assert body["call"]["record_id"] == call["record_id"]
    assert body["call"]["call_id"] == call["call_id"]
    assert body["call"]["tool"] == "transfer_money"
    assert body["call"]["arguments"] == {"amount": 5}
    assert body["call"]["conversation_id"] == conversation_id
    assert 0 < body["call"]["seconds_left"] <= 60
    assert body["call"]["admin_url"] == "https://gateway.example/admin/approvals"
    assert body["call"]["requester_key_id"] is not None
    # Whose call it is, not only which key: the key's owner (person or service) and team.
    assert body["call"]["requester"] == {
        "key_id": body["call"]["requester_key_id"],
        "name": "team",
        "owner": "team",
        "team": "payments",
    }
    assert decided.json["call"]["requester"]["owner"] == "team"
    assert body["call"]["approvals_required"] == 1
    assert decided.json["call"]["state"] == "approved"
    assert decided.json["call"]["decision_reason"] == "fine"
    assert requested.json["id"] != decided.json["id"]


def test_an_expired_approval_is_announced(database_url: str) -> None:
    receiver = WebhookReceiver()
    with (
        serve(receiver.app()) as hooks,
        replicas(database_url, _notifications(hooks), approval_expiry_seconds=0.5) as [stack],
    ):
        conversation_id, turn = start(stack, "loop")
        [expired] = receiver.wait_for("ok", "approval.expired")

    _assert_signed(expired)
    assert expired.json["call"]["record_id"] == pending_call(turn)["record_id"]
    assert expired.json["call"]["conversation_id"] == conversation_id
    assert expired.json["call"]["state"] == "expired"


def test_failed_deliveries_are_retried_with_the_same_id_then_given_up_and_shown(
    database_url: str,
) -> None:
    receiver = WebhookReceiver()
    receiver.fail["flaky"] = 2
    receiver.fail["down"] = -1
    requested = ["approval.requested"]
    with serve(receiver.app()) as hooks:
        notifications = _notifications(
            hooks,
            max_attempts=3,
            webhooks=[
                {
                    "name": "flaky",
                    "url": f"{hooks}/flaky",
                    "events": requested,
                    "secret_env": "HOOK_SECRET",
                },
                {"name": "down", "url": f"{hooks}/down", "events": requested},
                # A Slack URL is a secret: it comes from a variable and is never shown.
                {"name": "slack", "url_env": "SLACK_URL", "events": requested, "format": "slack"},
            ],
        )
        slack_url = {"SLACK_URL": f"{hooks}/slack"}
        with replicas(database_url, notifications, environ=slack_url) as [stack]:
            start(stack, "loop")
            attempts = receiver.wait_for("flaky", "approval.requested", count=3)
            receiver.wait_for("down", "approval.requested", count=3)
            [slack] = receiver.wait_for("slack", "approval.requested")

            def given_up() -> bool:
                with stack.client(stack.admin_key) as admin:
                    page = admin.get("/v1/admin/webhooks/deliveries", params={"status": "gave_up"})
                return len(page.json()["data"]) == 1

            eventually(given_up, "the unreachable webhook is given up")
            with stack.client(stack.admin_key) as admin:
                deliveries = admin.get("/v1/admin/webhooks/deliveries").json()["data"]
            metrics = httpx.get(f"{stack.gateway.url}/metrics").text
            with signed_in_client(stack.gateway.url, stack.admin_key) as browser:
                page = browser.get("/admin/webhooks")

    assert len({a.headers["x-gateway-delivery"] for a in attempts}) == 1  # idempotency id
    for attempt in attempts:
        _assert_signed(attempt)
    by_url = {d["webhook"]: d for d in deliveries}
    assert by_url["flaky"]["status"] == "delivered"
    assert by_url["flaky"]["attempts"] == 3
    assert by_url["down"]["status"] == "gave_up"
    assert by_url["down"]["last_error"] == "HTTP 500"
    unsigned = [r for r in receiver.received if r.path == "down"]
    assert all("x-gateway-signature" not in r.headers for r in unsigned)  # no secret_env
    assert page.status_code == 200
    assert "1 failing or given up" in page.text  # the unreachable one; the flaky one landed
    assert "<code>down</code>" in page.text
    assert hooks not in page.text  # webhooks are named, never shown by URL
    assert "HTTP 500" in page.text
    text = slack.json["text"]
    assert "`transfer_money`" in text
    assert "for team" in text  # the requester's owner, not a key id
    assert "<https://gateway.example/admin/approvals|" in text
    event = 'event="approval.requested"'
    assert f'llm_gateway_webhook_deliveries_total{{{event},outcome="failed"}} 4.0' in metrics
    assert f'llm_gateway_webhook_deliveries_total{{{event},outcome="gave_up"}} 1.0' in metrics
    assert f'llm_gateway_webhook_deliveries_total{{{event},outcome="delivered"}} 2.0' in metrics
