"""Expired approvals in the queue: shown as expired and not approvable, also without JavaScript,
and reported as expired (not just gone) to a page following the live feed."""

from __future__ import annotations

from collections.abc import Iterator

import orjson
import pytest

from tests.support.admin_ui import csrf_token, signed_in_client
from tests.support.tool_loop import LoopStack, loop_stack_on
from tests.support.waiting import eventually

from .test_pages import start_turn


@pytest.fixture
def expiring(database_url: str) -> Iterator[LoopStack]:
    # Calls expire at once; the sweeper (first pass at start) is not due again during the test,
    # so only the expiry timer of the replica that parked the turn expires them.
    with loop_stack_on(
        database_url, approval_expiry_seconds=0.001, sweep_interval_seconds=3600
    ) as stack:
        yield stack


def test_an_expired_call_is_shown_expired_and_cannot_be_approved(expiring: LoopStack) -> None:
    # The replica that parked the turn expires the call at its expiry (its timer), not at the
    # next sweep: the queue lists it as decided, and approving it is refused.
    _, record_id = start_turn(expiring, "loop")
    with signed_in_client(expiring.gateway.url, expiring.admin_key) as client:

        def expired() -> bool:
            return 'class="state-expired"' in client.get("/admin").text

        eventually(expired, "the expiry timer expired the call")
        queue = client.get("/admin").text
        approved = client.post(
            f"/admin/calls/{record_id}/approve", data={"csrf_token": csrf_token(queue)}
        )
        assert approved.status_code == 409
        assert "not awaiting a decision" in approved.text
        decided = client.get("/admin").text
    assert f'id="call-{record_id}"' not in decided
    assert "no decision in time: the call did not run" in decided
    assert expiring.catalog.calls == [("get_time", {})]


def test_the_live_feed_says_a_call_expired(expiring: LoopStack) -> None:
    _, record_id = start_turn(expiring, "loop")
    with signed_in_client(expiring.gateway.url, expiring.admin_key) as client:
        token = csrf_token(client.get("/admin").text)
        client.post(f"/admin/calls/{record_id}/approve", data={"csrf_token": token})
        with client.stream("GET", "/admin/queue/events", params={"shown": record_id}) as feed:
            lines = feed.iter_lines()
            event = next(line for line in lines if line.startswith("event: gone"))
            data = next(lines)
    assert event == "event: gone"
    assert orjson.loads(data.removeprefix("data: ")) == {"record_id": record_id, "state": "expired"}


def test_two_approvers_in_the_queue_partial_then_released(database_url: str) -> None:
    rules = [{"server": "local", "tool": "transfer_money", "approvers": 2}]
    with loop_stack_on(database_url, {"tool_policies": {"approval_rules": rules}}) as stack:
        _, record_id = start_turn(stack, "loop")
        with signed_in_client(stack.gateway.url, stack.admin_key) as first:
            token = csrf_token(first.get("/admin").text)
            partial = first.post(
                f"/admin/calls/{record_id}/approve", data={"csrf_token": token, "reason": "ok"}
            )
            assert partial.headers["location"] == "/admin?done=partial"
            page = first.get(partial.headers["location"]).text
        with signed_in_client(stack.gateway.url, stack.other_admin_key) as second:
            # A page that shows the card with no approvals gets it again, now with one.
            shown = {"shown": f"{record_id}:0"}
            with second.stream("GET", "/admin/queue/events", params=shown) as feed:
                lines = feed.iter_lines()
                next(line for line in lines if line.startswith("event: call"))
                card = orjson.loads(next(lines).removeprefix("data: "))
            queue = second.get("/admin").text
            released = second.post(
                f"/admin/calls/{record_id}/approve", data={"csrf_token": csrf_token(queue)}
            )
            assert released.headers["location"] == "/admin?done=approved"

    assert "the call runs once another admin approves it too" in page
    assert "1 of 2 approvals (approved by reviewer)" in page
    assert "You approved: another admin must too" in page
    assert card["record_id"] == record_id
    assert "1 of 2 approvals" in card["html"]
    assert 'data-approvals="1"' in card["html"]
    assert "You approved" not in queue  # the other admin may approve


def test_the_live_feed_shows_an_approved_call_decided_with_its_outcome(database_url: str) -> None:
    # "Recently decided" follows the database like the queue: the approved call is listed with
    # what it did once it ran, not dropped from the list when it left `approved`.
    with loop_stack_on(database_url) as stack:
        _, record_id = start_turn(stack, "loop")
        with signed_in_client(stack.gateway.url, stack.admin_key) as client:
            token = csrf_token(client.get("/admin").text)
            client.post(f"/admin/calls/{record_id}/approve", data={"csrf_token": token})

            def ran() -> bool:
                return ("transfer_money", {"amount": 5}) in stack.catalog.calls

            eventually(ran, "the approved call ran")
            row = f'<tr class="state-succeeded" data-record-id="{record_id}">'

            def listed() -> bool:
                return row in client.get("/admin").text

            eventually(listed, "the page lists the call as decided, with its outcome")
            with client.stream("GET", "/admin/queue/events") as feed:
                lines = feed.iter_lines()
                next(line for line in lines if line.startswith("event: decided"))
                html = orjson.loads(next(lines).removeprefix("data: "))["html"]
    assert row in html
    assert "approved" in html
    assert "transferred" in html
