from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.support.databases import fresh_database
from tests.support.fake_openai import FakeOpenAI
from tests.support.gateway import RunningGateway, running_gateway
from tests.support.servers import serve

UPSTREAM_KEY = "sk-upstream-secret-for-tests"


@dataclass
class Stack:
    """A gateway in front of a fake OpenAI, with a user key and an analyst key."""

    gateway: RunningGateway
    fake: FakeOpenAI
    user_key: str
    analyst_key: str


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def stack(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    fake = FakeOpenAI()
    with (
        serve(fake.app()) as fake_url,
        fresh_database(request.param, tmp_path_factory.mktemp("db")) as database_url,
        running_gateway(
            database_url,
            environ={"FAKE_OPENAI_KEY": UPSTREAM_KEY},
            models=[
                {
                    "name": "gpt",
                    "provider": "openai",
                    "model": "gpt-upstream",
                    "base_url": f"{fake_url}/v1",
                    "api_key_env": "FAKE_OPENAI_KEY",
                },
                {"name": "mock", "provider": "mock"},
                {"name": "analyst-only", "provider": "mock", "roles": ["analyst"]},
                {
                    "name": "keyless",
                    "provider": "openai",
                    "api_key_env": "NOT_SET_ANYWHERE",
                },
            ],
        ) as gateway,
    ):
        yield Stack(
            gateway,
            fake,
            user_key=gateway.create_key("team-a", ["user"]),
            analyst_key=gateway.create_key("analysts", ["analyst"]),
        )


@pytest.fixture
def fresh_fake(stack: Stack) -> FakeOpenAI:
    stack.fake.replies.clear()
    stack.fake.requests.clear()
    stack.fake.headers.clear()
    return stack.fake
