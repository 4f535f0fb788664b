"""Start a real gateway on 127.0.0.1 and make API keys for it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from accounts.keys import KeyStore
from db.engine import create_engine, session_factory
from gateway.settings import Settings
from mcp_client.types import ToolCatalog
from migrations.commands import upgrade
from server.app import create_app
from tests.support.servers import serve


@dataclass
class RunningGateway:
    url: str
    database_url: str
    settings: Settings

    @property
    def v1(self) -> str:
        return f"{self.url}/v1"

    def create_key(self, name: str, roles: Iterable[str]) -> str:
        return create_key(self.database_url, name, roles)


def create_key(database_url: str, name: str, roles: Iterable[str]) -> str:
    async def make() -> str:
        engine = create_engine(database_url)
        try:
            key, _ = await KeyStore(session_factory(engine), 0).create(name, roles)
            return key
        finally:
            await engine.dispose()

    return asyncio.run(make())


# A module's gateway serves many tests' sign-ins from 127.0.0.1 within a minute; the throttle's
# own tests set their limits.
TEST_ADMIN_UI = {"sign_in_attempts_per_client": 10_000, "sign_in_attempts_per_key": 10_000}


def settings_for(database_url: str, **values: Any) -> Settings:
    return Settings.model_validate(
        {"database_url": database_url, "admin_ui": TEST_ADMIN_UI, **values}
    )


@contextmanager
def running_gateway(
    database_url: str,
    environ: Mapping[str, str] | None = None,
    tools: ToolCatalog | None = None,
    **values: Any,
) -> Iterator[RunningGateway]:
    settings = settings_for(database_url, **values)
    upgrade(database_url)
    app = create_app(settings, environ or {}, tools=tools)
    with serve(app) as url:
        yield RunningGateway(url, database_url, settings)
