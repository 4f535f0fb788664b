"""Schemathesis against the gateway's own OpenAPI document, every route, with real API keys: a
user's (most routes) and an admin's (the admin routes, which refuse a user before reading input).

Generated requests (valid and invalid) must never get a 5xx, and every documented response must
match its schema and content type. Bounded by ``max_examples`` so it stays well under a minute.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance

from tests.support.gateway import RunningGateway, running_gateway

CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    database = f"sqlite+aiosqlite:///{Path(tmp_path_factory.mktemp('db')) / 'gateway.db'}"
    with running_gateway(
        database,
        models=[{"name": "mock", "provider": "mock"}],
        key_limits={"default": {"requests_per_minute": 100_000}},
        tool_catalog={"http_allow_list": ["http://127.0.0.1:9/mcp"]},
    ) as running:
        yield running


def operations(running: RunningGateway, admin: bool) -> list[Any]:
    schema = schemathesis.openapi.from_url(f"{running.url}/openapi.json")
    found = [result.ok() for result in schema.get_all_operations()]
    chosen = [op for op in found if op.path.startswith("/v1/admin") == admin]
    # Revocations last: one may revoke the very key the fuzzer signs its requests with.
    return sorted(chosen, key=lambda op: op.path.endswith("/revoke"))


def test_no_server_errors_and_no_schema_violations(gateway: RunningGateway) -> None:
    chosen = operations(gateway, admin=False)
    assert len(chosen) >= 5
    exercise_all(gateway, chosen, gateway.create_key("fuzz", ["user"]))


def test_no_server_errors_on_admin_routes(gateway: RunningGateway) -> None:
    chosen = operations(gateway, admin=True)
    assert len(chosen) >= 15
    exercise_all(gateway, chosen, gateway.create_key("fuzz-admin", ["admin"]))


def exercise_all(running: RunningGateway, chosen: list[Any], key: str) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    for operation in chosen:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=20,
            deadline=None,
            derandomize=True,  # the same cases every run: `make test` must not flake
            suppress_health_check=list(HealthCheck),
        )
        def exercise(case: schemathesis.Case) -> None:
            if isinstance(case.body, dict) and "model" in case.body:
                case.body["model"] = "mock"  # reach the model call, not only the 404
            case.call_and_validate(base_url=running.url, headers=headers, checks=CHECKS)

        exercise()
