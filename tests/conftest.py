from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.databases import fresh_database
from tests.support.fake_openai import FakeOpenAI
from tests.support.servers import serve
from tests.support.tool_loop import LoopStack, loop_stack_on


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database on each backend; the test (or the gateway harness) migrates it."""
    with fresh_database(request.param, tmp_path) as url:
        yield url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}"


@pytest.fixture
def fake_openai() -> Iterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI()
    with serve(fake.app()) as url:
        yield fake, f"{url}/v1"


@pytest.fixture
def loop_stack(database_url: str) -> Iterator[LoopStack]:
    """A gateway with scripted mock models and a counting tool catalog, on each backend."""
    with loop_stack_on(database_url) as stack:
        yield stack
