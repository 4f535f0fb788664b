"""The approval queue in pages: 50 held calls a page, oldest first, with a count and links, and a
live feed that follows the page it was opened from."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from admin.ui.queue_rows import PAGE_SIZE
from tests.support.admin_ui import signed_in_client
from tests.support.databases import fresh_database
from tests.support.tool_loop import LoopStack, loop_stack_on

from .test_pages import start_turn

CARD_ID = re.compile(r'<article class="card call[^"]*" id="call-([^"]+)"')


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def paged(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LoopStack, list[str]]]:
    """A gateway holding one call more than a page, and the held calls' ids, oldest first."""
    with (
        fresh_database(request.param, tmp_path_factory.mktemp("db")) as database_url,
        loop_stack_on(database_url) as stack,
    ):
        yield stack, [start_turn(stack, "loop")[1] for _ in range(PAGE_SIZE + 1)]


def test_the_queue_is_paged_oldest_first(paged: tuple[LoopStack, list[str]]) -> None:
    ui_stack, held = paged
    with signed_in_client(ui_stack.gateway.url, ui_stack.admin_key) as client:
        first = client.get("/admin").text
        second = client.get("/admin", params={"page": 2}).text
        past_the_end = client.get("/admin", params={"page": 99}).text
        nonsense = client.get("/admin", params={"page": "-1"}).text
    assert CARD_ID.findall(first) == held[:PAGE_SIZE]
    assert f"1 to {PAGE_SIZE} of {PAGE_SIZE + 1} waiting" in first
    assert 'href="/admin?page=2" rel="next"' in first
    assert 'rel="prev"' not in first
    assert CARD_ID.findall(second) == held[PAGE_SIZE:]
    assert f"{PAGE_SIZE + 1} to {PAGE_SIZE + 1} of {PAGE_SIZE + 1} waiting" in second
    assert 'href="/admin?page=1" rel="prev"' in second
    assert 'rel="next"' not in second
    assert 'data-page="2"' in second
    assert CARD_ID.findall(past_the_end) == held[PAGE_SIZE:]
    assert CARD_ID.findall(nonsense) == held[:PAGE_SIZE]


def test_the_live_feed_sends_the_cards_of_its_page_only(
    paged: tuple[LoopStack, list[str]],
) -> None:
    ui_stack, held = paged
    with (
        signed_in_client(ui_stack.gateway.url, ui_stack.admin_key) as client,
        client.stream("GET", "/admin/queue/events", params={"page": 2}) as feed,
    ):
        lines = feed.iter_lines()
        next(line for line in lines if line.startswith("event: call"))
        data = next(lines)
        # The next event after the page's one card is the running table: no other card came.
        following = next(line for line in lines if line.startswith("event:"))
    assert held[PAGE_SIZE] in data
    assert following == "event: running"
