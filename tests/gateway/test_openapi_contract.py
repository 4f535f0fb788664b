"""Schemathesis against the gateway's own OpenAPI document, with a real API key.

Generated requests (valid and invalid) must never get a 5xx, and every documented response must
match its schema and content type. Bounded by ``max_examples`` so it stays a few seconds.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance

from tests.support.gateway import RunningGateway, running_gateway

CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningGateway, str]]:
    database = f"sqlite+aiosqlite:///{Path(tmp_path_factory.mktemp('db')) / 'gateway.db'}"
    with running_gateway(
        database,
        models=[{"name": "mock", "provider": "mock"}],
        key_limits={"default": {"requests_per_minute": 100_000}},
    ) as running:
        yield running, running.create_key("fuzz", ["user"])


def test_no_server_errors_and_no_schema_violations(gateway: tuple[RunningGateway, str]) -> None:
    running, key = gateway
    schema = schemathesis.openapi.from_url(f"{running.url}/openapi.json")
    headers = {"Authorization": f"Bearer {key}"}
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 5

    for operation in operations:

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
