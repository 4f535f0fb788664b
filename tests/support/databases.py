"""Fresh databases for tests: a SQLite file, or a throwaway PostgreSQL database."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import asyncpg
import pytest

POSTGRES_URL = os.environ.get(
    "LLM_GATEWAY_TEST_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)
IN_CI = os.environ.get("CI", "").lower() == "true"


def _plain(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://", 1)


async def _admin(statement: str) -> None:
    connection = await asyncpg.connect(_plain(POSTGRES_URL), timeout=5)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


def require_postgres() -> None:
    """Skip outside CI when PostgreSQL is absent; in CI its absence is a failure."""
    try:
        asyncio.run(_admin("SELECT 1"))
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        reason = f"PostgreSQL at {POSTGRES_URL} is unreachable: {exc}"
        if IN_CI:
            pytest.fail(reason)
        pytest.skip(reason)


@contextmanager
def postgres_database() -> Iterator[str]:
    require_postgres()
    name = f"gw_test_{uuid.uuid4().hex[:12]}"
    asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    base, _, _ = POSTGRES_URL.rpartition("/")
    try:
        yield f"{base}/{name}"
    finally:
        asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@contextmanager
def sqlite_database(directory: Path) -> Iterator[str]:
    yield f"sqlite+aiosqlite:///{directory / 'gateway.db'}"


@contextmanager
def fresh_database(backend: str, directory: Path) -> Iterator[str]:
    if backend == "postgresql":
        with postgres_database() as url:
            yield url
    else:
        with sqlite_database(directory) as url:
            yield url
