"""Throwaway PostgreSQL databases for the benchmarks (127.0.0.1:5432 unless
``LLM_GATEWAY_BENCH_POSTGRES_URL`` says otherwise: not ``GATEWAY_*``, which the gateway refuses
as an unknown setting when it inherits the environment)."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import asyncpg

POSTGRES_URL = os.environ.get(
    "LLM_GATEWAY_BENCH_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)


def plain(url: str) -> str:
    """The SQLAlchemy URL as asyncpg takes it."""
    return url.replace("postgresql+asyncpg://", "postgresql://", 1)


async def _admin(statement: str) -> None:
    connection = await asyncpg.connect(plain(POSTGRES_URL), timeout=5)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


@contextmanager
def throwaway_postgres(prefix: str) -> Iterator[str]:
    """A new empty database's SQLAlchemy URL, dropped afterwards."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    try:
        yield f"{POSTGRES_URL.rpartition('/')[0]}/{name}"
    finally:
        asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@contextmanager
def database(kind: str, workdir: Path, prefix: str) -> Iterator[str]:
    """A fresh database of ``kind`` (sqlite | postgresql) for one benchmark gateway."""
    if kind == "sqlite":
        yield f"sqlite+aiosqlite:///{workdir}/{prefix}.db"
        return
    with throwaway_postgres(prefix) as url:
        yield url
