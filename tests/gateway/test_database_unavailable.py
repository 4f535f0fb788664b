"""A database that cannot be reached (restarting, failing over) is a 503 with Retry-After and a
JSON error naming no database text; callers retry. Staged on PostgreSQL as a restart looks:
new connections refused, open ones ended."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from logging import ERROR

import asyncpg
import httpx
import pytest

from tests.support.databases import postgres_database
from tests.support.gateway import RunningGateway, running_gateway


async def _admin(url: str, *statements: str) -> None:
    base, _, _ = url.replace("postgresql+asyncpg://", "postgresql://").rpartition("/")
    connection = await asyncpg.connect(f"{base}/postgres")
    try:
        for statement in statements:
            await connection.execute(statement)
    finally:
        await connection.close()


def _refuse_connections(url: str, refused: bool) -> None:
    name = url.rpartition("/")[2]
    statements = [f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS {not refused}']
    if refused:  # and end the open ones, as a restart does
        statements.append(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            f"WHERE datname = '{name}' AND pid <> pg_backend_pid()"
        )
    asyncio.run(_admin(url, *statements))


@pytest.fixture
def gateway() -> Iterator[RunningGateway]:
    with postgres_database() as url, running_gateway(url, auth_cache_seconds=0) as running:
        yield running
        _refuse_connections(url, refused=False)  # the database is dropped after


def test_a_database_that_cannot_be_reached_is_503_with_retry_after(
    gateway: RunningGateway, caplog: pytest.LogCaptureFixture
) -> None:
    key = gateway.create_key("team", ["user"])
    headers = {"authorization": f"Bearer {key}"}
    with httpx.Client(base_url=gateway.url, headers=headers, timeout=30) as client:
        assert client.get("/v1/models").status_code == 200
        _refuse_connections(gateway.database_url, refused=True)
        refused = client.get("/v1/models")
        _refuse_connections(gateway.database_url, refused=False)
        again = client.get("/v1/models")

    assert refused.status_code == 503, refused.text
    assert refused.headers["retry-after"] == "1"
    error = refused.json()["error"]
    assert (error["type"], error["code"]) == ("service_unavailable", "database_unavailable")
    assert "database system" not in refused.text
    assert "asyncpg" not in refused.text
    assert again.status_code == 200, again.text
    # Answered, not re-raised to the server (which would drop the connection it answered on).
    assert not [r for r in caplog.records if r.name == "uvicorn.error" and r.levelno >= ERROR]
