"""The application factory. Nothing happens at import time; everything is built from Settings."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

from fastapi import FastAPI

from gateway import health
from gateway.errors import install_error_handlers
from gateway.input_guard import JsonGuardMiddleware
from gateway.middleware import BodySizeLimitMiddleware, RequestContextMiddleware
from gateway.openai_api import routes as openai_routes
from gateway.services import Services
from gateway.settings import Settings
from llm_service.providers import ADAPTER_FACTORIES
from llm_service.registry import AdapterFactory


def create_app(
    settings: Settings,
    environ: Mapping[str, str],
    factories: Mapping[str, AdapterFactory] = ADAPTER_FACTORIES,
) -> FastAPI:
    """``environ`` supplies the provider keys named by each model's ``api_key_env``."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        services = await Services.start(settings, environ, factories)
        app.state.services = services
        try:
            yield
        finally:
            await services.stop()

    app = FastAPI(title="llm-gateway", version="0.1.0", lifespan=lifespan)
    install_error_handlers(app)
    app.include_router(health.router)
    app.include_router(openai_routes.router)
    app.add_middleware(
        JsonGuardMiddleware,
        max_depth=settings.max_json_depth,
        max_messages=settings.max_messages,
    )
    # Outermost last: the context exists before the size check can refuse.
    app.add_middleware(BodySizeLimitMiddleware, max_bytes=settings.max_request_bytes)
    app.add_middleware(RequestContextMiddleware)
    return app
