"""The application factory. Nothing happens at import time; everything is built from Settings."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from starlette.routing import Route
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from accounts.sso.client import OidcClient, oidc_client
from admin.api import admin_router
from admin.ui.routes import admin_ui_router
from gateway import conversations_api, embeddings_api, health, probes, tools_api
from gateway.anthropic_api import routes as anthropic_routes
from gateway.errors import install_error_handlers
from gateway.hot_routes import GatewayApp, Handler, HotRoutes, MethodAndPath, documented_routes
from gateway.input_guard import JsonGuardMiddleware
from gateway.mcp_server.endpoint import McpEndpoint
from gateway.metrics import GatewayMetrics, metrics_endpoint
from gateway.middleware import BodySizeLimitMiddleware, RequestContextMiddleware
from gateway.openai_api import routes as openai_routes
from gateway.providers import ADAPTER_FACTORIES
from gateway.responses_api import routes as responses_routes
from gateway.services import Services
from gateway.settings import ConfigError, Settings
from gateway.shutdown import Drain, DrainMiddleware
from gateway.tracing import Tracing
from mcp_client.types import ToolCatalog


def check_environment(settings: Settings, environ: Mapping[str, str]) -> OidcClient | None:
    """What the settings need from the environment beyond provider keys (those make a model
    unavailable, not the gateway): ``ConfigError`` naming a missing secret."""
    try:
        return oidc_client(settings.admin_ui.oidc, environ)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def create_app(
    settings: Settings,
    environ: Mapping[str, str],
    tools: ToolCatalog | None = None,
    *,
    metrics_dir: Path | None = None,
) -> FastAPI:
    """``environ`` supplies the provider keys named by each model's ``api_key_env``;
    ``metrics_dir`` is the multiprocess metrics directory of ``serve --workers N``.

    ``ConfigError`` for a secret the settings name but ``environ`` lacks."""
    oidc = check_environment(settings, environ)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        services = await Services.start(
            settings,
            environ,
            ADAPTER_FACTORIES,
            tools,
            metrics=app.state.metrics,
            tracer=tracing.tracer,
            oidc=oidc,
        )
        app.state.services = services
        try:
            async with mcp.run(services):
                yield
        finally:
            await services.stop()
            tracing.shutdown()

    app = GatewayApp(title="llm-gateway", version="0.1.0", lifespan=lifespan)
    install_error_handlers(app)
    app.include_router(health.router)
    app.include_router(probes.router)
    app.include_router(openai_routes.router)
    app.include_router(conversations_api.router)
    app.include_router(anthropic_routes.router)
    app.include_router(responses_routes.router)
    app.include_router(embeddings_api.router)
    app.include_router(tools_api.router)
    app.include_router(admin_router())
    app.include_router(admin_ui_router())
    # Owned by this app (not prometheus_client's global registry), so apps never collide.
    app.state.metrics = metrics = GatewayMetrics(
        metrics_dir,
        models=[model.name for model in settings.models],
        max_tool_labels=settings.metrics_max_tool_labels,
    )
    tracing = Tracing(settings.tracing)
    app.state.drain = drain = Drain(settings.shutdown_drain_seconds)
    metrics.track(drain)
    app.add_route("/metrics", metrics_endpoint, include_in_schema=False)
    mcp = McpEndpoint(tracing.tracer)
    if settings.mcp_server.enabled:
        # A Route given an ASGI app (not a function) passes the request to it untouched.
        app.router.routes.append(Route("/mcp", mcp, methods=["GET", "POST", "DELETE"]))
    # Innermost of the gateway's middlewares: hot routes pass every check the others make.
    hot_routes: dict[MethodAndPath, Handler] = {
        **openai_routes.HOT_ROUTES,
        **anthropic_routes.HOT_ROUTES,
        **responses_routes.HOT_ROUTES,
        **embeddings_api.HOT_ROUTES,
        **conversations_api.HOT_ROUTES,
    }
    app.add_middleware(HotRoutes, routes=documented_routes(app, hot_routes))
    app.add_middleware(probes.AllowedMethods)
    app.edge_paths = frozenset(path for path in hot_routes if "{" not in path[1])
    app.add_middleware(
        JsonGuardMiddleware,
        max_depth=settings.max_json_depth,
        max_messages=settings.max_messages,
    )
    # Outermost last: the context exists before the size check can refuse.
    app.add_middleware(BodySizeLimitMiddleware, max_bytes=settings.max_request_bytes)
    app.add_middleware(DrainMiddleware, drain=drain)
    app.add_middleware(RequestContextMiddleware, metrics=metrics, tracer=tracing.tracer)
    if settings.forwarded_allow_ips:
        # Outermost: every middleware and route sees the one client address (gateway/forwarded.py).
        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=settings.forwarded_allow_ips)
    return app
