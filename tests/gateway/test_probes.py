"""``HEAD /`` and ``OPTIONS`` on any path, as clients probe a base URL before using it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.gateway import RunningGateway, running_gateway


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    database_url = f"sqlite+aiosqlite:///{Path(tmp_path_factory.mktemp('db')) / 'gateway.db'}"
    with running_gateway(database_url, models=[{"name": "mock", "provider": "mock"}]) as gateway:
        yield gateway


def test_the_base_url_answers_head_and_get_without_a_key(gateway: RunningGateway) -> None:
    head = httpx.head(gateway.url + "/")
    get = httpx.get(gateway.url + "/")

    assert (head.status_code, head.content) == (200, b"")
    assert get.json() == {"status": "ok"}


@pytest.mark.parametrize(
    ("path", "allow"),
    [
        ("/v1/messages", "OPTIONS, POST"),
        ("/v1/messages/count_tokens", "OPTIONS, POST"),
        ("/v1/responses/resp_123", "DELETE, GET, OPTIONS"),
        ("/mcp", "DELETE, GET, HEAD, OPTIONS, POST"),
    ],
)
def test_options_names_the_methods_a_path_takes(
    gateway: RunningGateway, path: str, allow: str
) -> None:
    answer = httpx.options(gateway.url + path)

    assert answer.status_code == 204
    assert answer.headers["allow"] == allow


def test_options_on_a_path_nothing_serves_is_not_found(gateway: RunningGateway) -> None:
    assert httpx.options(gateway.url + "/v1/nothing-here").status_code == 404
