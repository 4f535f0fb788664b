"""Hostile bodies get 400/413 before any work, never a 500, and nothing is stored."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.input_guard import BodyRefused, check_json_body
from tests.support.gateway import RunningGateway, running_gateway

LIMITS = {"max_depth": 8, "max_messages": 3}


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (b'{"model": "m\xff"}', 400, "invalid_encoding"),
        (b'{"model": "m"', 400, "invalid_json"),
        (b'{"model": "\\ud800"}', 400, "invalid_json"),  # a lone surrogate: not encodable
        (b'{"model": "a\\u0000b"}', 400, "nul_character"),
        (b'{"a\\u0000": 1}', 400, "nul_character"),
        (b'{"m": [[{"k": ["x", "y\\u0000"]}]]}', 400, "nul_character"),
        (b'{"m": [{"k\\u0000": null}]}', 400, "nul_character"),
        (b'{"model": "a", "model": "b"}', 400, "duplicate_key"),
        (b'{"seed": 123456789012345678901234567890}', 400, "number_too_large"),
        (b'{"temperature": 1e400}', 400, "invalid_json"),
        (b'{"temperature": NaN}', 400, "invalid_json"),
        (b'{"a": ' + b"[" * 9 + b"]" * 9 + b"}", 400, "too_deep"),
        (b"[" * 5000 + b"]" * 5000, 400, "invalid_json"),
        (b'{"messages": [{}, {}, {}, {}]}', 413, "too_many_messages"),
    ],
)
def test_hostile_bodies_are_refused(body: bytes, status: int, code: str) -> None:
    with pytest.raises(BodyRefused) as caught:
        check_json_body(body, **LIMITS)

    assert (caught.value.status, caught.value.code) == (status, code)


def test_ordinary_bodies_pass() -> None:
    check_json_body(
        b'{"messages": [{"role": "user", "content": "hi \\u00e9"}], "seed": 42}', **LIMITS
    )


def test_the_text_of_a_nul_escape_is_not_a_nul() -> None:
    # An escaped backslash, then the letters "u0000": text about NUL, not a NUL.
    check_json_body(b'{"content": "write \\\\u0000 for NUL"}', **LIMITS)


def test_depth_counts_arrays_and_objects_alike() -> None:
    check_json_body(b'{"a": ' + b"[" * 7 + b"]" * 7 + b"}", **LIMITS)  # 8 levels: allowed
    with pytest.raises(BodyRefused):
        check_json_body(b"[" * 5 + b'{"a": {"b": [{}]}}' + b"]" * 5, **LIMITS)  # 9 levels


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_either_pass_or_are_refused_cleanly(body: bytes) -> None:
    status = 200
    try:
        check_json_body(body, **LIMITS)
    except BodyRefused as refused:
        status = refused.status
    assert status in (200, 400, 413)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningGateway, str]]:
    database = f"sqlite+aiosqlite:///{Path(tmp_path_factory.mktemp('db')) / 'gateway.db'}"
    with running_gateway(
        database, models=[{"name": "mock", "provider": "mock"}], max_messages=2
    ) as running:
        yield running, running.create_key("team", ["user"])


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b'{"model": "mock", "messages": [{"role": "user", "content": "\xff\xfe"}]}', 400),
        (b'{"model": "mock", "messages": [{"role": "user", "content": "a\\u0000"}]}', 400),
        (b'{"model": "mock", "model": "x", "messages": []}', 400),
        (b'{"model": "mock", "max_tokens": 99999999999999999999999, "messages": []}', 400),
        (b'{"model": "mock", "messages": [' + b"[" * 100 + b"]" * 100 + b"]}", 400),
        (b'{"model": "mock", "messages": [1, 2, 3]}', 413),
    ],
)
def test_the_gateway_refuses_them_before_any_work(
    gateway: tuple[RunningGateway, str], body: bytes, status: int
) -> None:
    running, key = gateway
    response = httpx.post(
        f"{running.v1}/chat/completions",
        content=body,
        headers={"authorization": f"Bearer {key}", "content-type": "application/json"},
    )

    assert response.status_code == status
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_a_good_request_still_works(gateway: tuple[RunningGateway, str]) -> None:
    running, key = gateway
    response = httpx.post(
        f"{running.v1}/chat/completions",
        json={"model": "mock", "messages": [{"role": "user", "content": "hi"}]},
        headers={"authorization": f"Bearer {key}"},
    )

    assert response.status_code == 200
    assert response.json()["choices"][0]["message"]["content"] == "Echo: hi"


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded"])
def test_a_body_not_sent_as_json_is_refused_unread(
    gateway: tuple[RunningGateway, str], content_type: str
) -> None:
    """The guard checks JSON bodies only, so nothing else may be parsed as JSON behind it."""
    running, key = gateway
    response = httpx.post(
        f"{running.v1}/chat/completions",
        content=b'{"model": "mock", "model": "x", "messages": [{"role": "user", "content": "hi"}]}',
        headers={"authorization": f"Bearer {key}", "content-type": content_type},
    )

    assert response.status_code == 400
    assert "Content-Type: application/json" in response.json()["error"]["message"]


NUL_PATHS = (
    "/v1/responses/resp_%00",
    "/v1/responses/resp_%00/input_items",
    "/v1/conversations/a%00b",
    "/v1/conversations/a%00b/events",
    "/v1/models/m%00",
    "/v1/admin/approvals/a%00/approve",
    "/v1/admin/keys/%00",
    "/v1/admin/tools/t%00/policy",
)


def test_a_nul_in_a_path_is_a_400_before_any_database(database_url: str) -> None:
    # PostgreSQL refuses a NUL in text: it used to surface as a 500 on these routes.
    with running_gateway(database_url, models=[{"name": "mock", "provider": "mock"}]) as running:
        key = running.create_key("admin", ["admin"])
        for path in NUL_PATHS:
            for method in ("GET", "POST", "PUT", "DELETE"):
                response = httpx.request(
                    method,
                    f"{running.url}{path}",
                    headers={"authorization": f"Bearer {key}"},
                    json={},
                )
                assert response.status_code == 400, (path, method, response.text)
                assert response.json()["error"]["code"] == "nul_character"
