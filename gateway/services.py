"""Everything a running gateway holds, built from Settings at start and closed at stop."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import structlog
from fastapi import Request
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from db.engine import create_engine, session_factory
from db.migrate import head_revision
from gateway.keys import KeyStore
from gateway.settings import Settings
from gateway.usage import UsageRecorder
from llm_service.registry import AdapterFactory, ModelRegistry

log = structlog.get_logger("gateway.services")


@dataclass
class Services:
    settings: Settings
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    keys: KeyStore
    registry: ModelRegistry
    usage: UsageRecorder
    head_revision: str | None

    @classmethod
    async def start(
        cls,
        settings: Settings,
        environ: Mapping[str, str],
        factories: Mapping[str, AdapterFactory],
    ) -> Services:
        engine = create_engine(settings.database_url, settings.database_pool)
        sessions = session_factory(engine)
        keys = KeyStore(sessions, settings.auth_cache_seconds)
        if settings.admin_key is not None:
            await keys.ensure(settings.admin_key.get_secret_value(), "admin (bootstrap)", ["admin"])
        registry = ModelRegistry.build(settings.models, factories, environ)
        await registry.probe()
        for name, state in registry.summary().items():
            if not state["available"]:
                log.warning("model_unavailable", model=name, reason=state["reason"])
        usage = UsageRecorder(sessions, settings.usage_flush_seconds)
        usage.start()
        return cls(settings, engine, sessions, keys, registry, usage, head_revision())

    async def stop(self) -> None:
        await self.usage.aclose()
        await self.registry.aclose()
        await self.engine.dispose()


async def get_services(request: Request) -> Services:
    # async on purpose: FastAPI runs a plain ``def`` dependency in a worker thread, a thread
    # hop on every request for a one-line attribute read.
    services: Services = request.app.state.services
    return services
