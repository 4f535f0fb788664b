"""Clean starts: workers and replicas starting together on one fresh database all serve.

Every start-up write (the GATEWAY_ADMIN_KEY bootstrap key, tool pins, the retention lease) is
idempotent across processes, so the loser of a race reads what the winner wrote instead of
dying on a unique constraint. Each round starts two replicas of two workers (four whole gateways,
each with its own engine and pool, as four processes would have) at once on a just-migrated,
empty database; twenty rounds per backend. Two ``migrate`` runs at once on an empty database
both succeed (PostgreSQL: an advisory lock; SQLite: a lock file) and leave it at the head.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from pathlib import Path
from subprocess import PIPE, STDOUT

import httpx
import pytest
import yaml
from fastapi import FastAPI
from sqlalchemy import func, select, text

import db.usage_models  # noqa: F401  (its tables are emptied too)
from db.base import Base
from db.engine import create_engine, session_factory
from db.models import ApiKey
from migrations.commands import upgrade
from server.app import create_app
from tests.support.databases import POSTGRES_URL, _admin, postgres_database, require_postgres
from tests.support.gateway import settings_for
from tests.support.processes import REPO, TIMEOUT

ROUNDS = 20
REPLICAS = 2
WORKERS = 2
ADMIN_KEY = "gw-bootstrap-admin-key-for-clean-start-tests"
BODY = {"model": "mock", "messages": [{"role": "user", "content": "hi"}]}


async def serve_until(app: FastAPI, served: asyncio.Queue[int], stop: asyncio.Event) -> None:
    """One gateway's whole life in one task (its MCP server's task group must end in the task
    that began it): start, answer /readyz and a chat request with the bootstrap key, wait."""
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            ready = await client.get("/readyz")
            headers = {"authorization": f"Bearer {ADMIN_KEY}"}
            reply = await client.post("/v1/chat/completions", json=BODY, headers=headers)
            await served.put(ready.status_code + reply.status_code)
            await stop.wait()


async def start_together(database_url: str) -> None:
    """REPLICAS x WORKERS whole gateways started at once (each with its own engine and pool, as
    separate processes have) all serve."""
    settings = settings_for(
        database_url,
        admin_key=ADMIN_KEY,
        models=[{"name": "mock", "provider": "mock"}],
    )
    await serve_together([create_app(settings, {}) for _ in range(REPLICAS * WORKERS)])


async def serve_together(apps: list[FastAPI]) -> None:
    served: asyncio.Queue[int] = asyncio.Queue()
    stop = asyncio.Event()
    gateways = [asyncio.create_task(serve_until(app, served, stop)) for app in apps]
    try:
        for _ in apps:
            waiting = asyncio.ensure_future(served.get())
            await asyncio.wait([waiting, *gateways], return_when=asyncio.FIRST_COMPLETED)
            for gateway in gateways:
                if gateway.done():
                    gateway.result()  # a gateway that failed to start fails the test here
            assert await waiting == 200 + 200
    finally:
        stop.set()
        # Bounded: a gateway whose shutdown never ends fails here instead of hanging the suite.
        _, stuck = await asyncio.wait(gateways, timeout=TIMEOUT)
        assert not stuck, f"{len(stuck)} gateway(s) never finished shutting down"


async def count_keys(database_url: str) -> None:
    engine = create_engine(database_url)
    try:
        async with session_factory(engine)() as session:
            assert await session.scalar(select(func.count()).select_from(ApiKey)) == 1
    finally:
        await engine.dispose()


async def empty(database_url: str) -> None:
    """Back to a just-migrated database: every table empty (no migration seeds rows), ids
    restarting, the schema and its version kept. Far cheaper than migrating anew each round."""
    tables = [table.name for table in Base.metadata.sorted_tables]
    engine = create_engine(database_url)
    try:
        async with engine.begin() as connection:
            if connection.dialect.name == "postgresql":
                await connection.execute(
                    text(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")
                )
            else:
                for table in reversed(tables):
                    await connection.execute(text(f"DELETE FROM {table}"))
    finally:
        await engine.dispose()


def start_rounds(database_url: str) -> None:
    upgrade(database_url)
    for _ in range(ROUNDS):
        asyncio.run(empty(database_url))
        asyncio.run(start_together(database_url))
        asyncio.run(count_keys(database_url))


def test_workers_and_replicas_start_together_on_postgresql() -> None:
    with postgres_database() as url:
        start_rounds(url)


def test_workers_and_replicas_start_together_on_sqlite(tmp_path: Path) -> None:
    start_rounds(f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}")


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_two_migrations_at_once_both_succeed(backend: str, tmp_path: Path) -> None:
    if backend == "postgresql":
        require_postgres()
        name = f"gw_test_{uuid.uuid4().hex[:12]}"
        asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
        url = f"{POSTGRES_URL.rpartition('/')[0]}/{name}"
    else:
        url = f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}"
    try:
        config = tmp_path / "gateway.yaml"
        config.write_text(yaml.safe_dump({"database_url": url}))
        command = [sys.executable, "-m", "server.cli", "migrate", "--config", str(config)]
        runs = [subprocess.Popen(command, cwd=REPO, stdout=PIPE, stderr=STDOUT) for _ in "ab"]
        for run in runs:
            output, _ = run.communicate(timeout=TIMEOUT)
            assert run.returncode == 0, output.decode()

        async def revisions() -> list[str]:
            engine = create_engine(url)
            try:
                async with engine.connect() as connection:
                    rows = await connection.execute(text("SELECT version_num FROM alembic_version"))
                    return [row[0] for row in rows]
            finally:
                await engine.dispose()

        assert len(asyncio.run(revisions())) == 1
    finally:
        if backend == "postgresql":
            asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
