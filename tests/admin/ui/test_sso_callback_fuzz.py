"""The SSO callback's query as anyone may write it (hypothesis: repeated, missing, overlong,
non-ASCII and NUL-holding parameters, with this browser's real state or not), on SQLite and
PostgreSQL: always the sign-in page (or, never here, a signed-in one), never a 5xx, a traceback or
the database's words. The scripted provider refuses every code."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.admin.ui.test_sso_callback import Stack, stack_with, started
from tests.gateway.test_path_fuzz import LEAKS

NAMES = st.sampled_from(["code", "state", "error", "error_description", "iss", "session_state"])
VALUES = st.one_of(
    st.text(max_size=40),
    st.text(min_size=150, max_size=5000),
    st.just("THE_STATE"),  # this browser's real state
    st.sampled_from(["access_denied", "invalid_request", "\x00", "%00", "é", "\u202e"]),
)
QUERIES = st.lists(st.tuples(NAMES, VALUES), max_size=6)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def stack(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    with stack_with(tmp_path_factory.mktemp("sso"), backend=request.param) as running:
        yield running


def test_any_callback_query_is_the_sign_in_page(stack: Stack) -> None:
    @given(query=QUERIES)
    @settings(
        max_examples=60,
        deadline=None,
        derandomize=True,  # the same cases every run: `make test` must not flake
        suppress_health_check=list(HealthCheck),
    )
    def exercise(query: list[tuple[str, str]]) -> None:
        with httpx.Client(base_url=stack.gateway.url, timeout=30) as browser:
            state = started(stack, browser)
            params = [(name, state if value == "THE_STATE" else value) for name, value in query]
            page = browser.get("/admin/sso/callback", params=params)
        assert page.status_code in (400, 401, 403, 502), (params, page.status_code, page.text)
        assert "<h1>Sign in</h1>" in page.text
        assert not LEAKS.search(page.text), page.text

    exercise()
