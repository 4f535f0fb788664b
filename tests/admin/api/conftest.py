from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.databases import fresh_database
from tests.support.tool_loop import LoopStack, loop_stack_on


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def admin_stack(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LoopStack]:
    """One loop gateway per module and backend: admin tests only add rows, never remove them."""
    with (
        fresh_database(request.param, tmp_path_factory.mktemp("db")) as database_url,
        loop_stack_on(database_url) as stack,
    ):
        yield stack
