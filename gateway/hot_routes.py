"""Routes served at the edge of the ASGI stack, past FastAPI's router.

FastAPI's router, request wrapper and dependency solver cost about 55 us a request even for a
handler that takes nothing but the Request (docs/performance.md); on ``/v1/chat/completions``
that was a tenth of what the gateway adds before a streamed answer's first byte. A hot route is
called from the innermost of the gateway's middlewares, so the request id, drain, size limit and
JSON guard all still apply; its failures get the responses FastAPI's exception handlers give,
and its OpenAPI entry is the FastAPI route declared for the same method and path.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.errors import flat_routes, handle_error

Handler = Callable[[Request], Awaitable[Response]]
MethodAndPath = tuple[str, str]


class HotRoutes:
    """Exact paths by one dict lookup; paths with parameters (``{id}``) by their route's regex."""

    def __init__(
        self, app: ASGIApp, routes: Mapping[MethodAndPath, tuple[Handler, BaseRoute]]
    ) -> None:
        self.app = app
        self.routes = {key: hot for key, hot in routes.items() if "{" not in key[1]}
        self.templated = [(key[0], hot) for key, hot in routes.items() if "{" in key[1]]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        hot = self._match(scope) if scope["type"] == "http" else None
        if hot is None:
            await self.app(scope, receive, send)
            return
        handler, scope["route"] = hot  # the route names metrics and shapes errors, as FastAPI's
        request = Request(scope, receive)
        try:
            response = await handler(request)
        except Exception as exc:
            response = await handle_error(request, exc)
        await response(scope, receive, send)

    def _match(self, scope: Scope) -> tuple[Handler, BaseRoute] | None:
        hot = self.routes.get((scope["method"], scope["path"]))
        if hot is not None:
            return hot
        for method, (handler, route) in self.templated:
            if method == scope["method"]:
                match, child = route.matches(scope)
                if match == Match.FULL:
                    scope.update(child)  # path_params, as the router would set them
                    return handler, route
        return None


def documented_routes(
    app: FastAPI, handlers: Mapping[MethodAndPath, Handler]
) -> dict[MethodAndPath, tuple[Handler, BaseRoute]]:
    """Each handler with the FastAPI route that documents its method and path."""
    found: dict[MethodAndPath, tuple[Handler, BaseRoute]] = {}
    for (method, path), handler in handlers.items():
        scope = {"type": "http", "method": method, "path": path, "root_path": ""}
        for route in flat_routes(app.router.routes):
            if route.matches(scope)[0] == Match.FULL:
                found[(method, path)] = (handler, route)
                break
        else:
            raise LookupError(f"no FastAPI route documents {method} {path}")
    return found


class GatewayApp(FastAPI):
    """FastAPI, whose hot routes with an exact path enter the gateway's own middlewares directly.

    Every request passed FastAPI's and Starlette's own layers first: the native telemetry check
    (which looks up OpenTelemetry's global providers on every request), ``ServerErrorMiddleware``
    with its ``send`` wrapper, the exception telemetry and body-limit layers; about 3-4 % of a
    whole request's CPU (docs/performance.md). None of them acts on a hot route: its failures
    are answered by ``HotRoutes`` through the exception handlers, and the gateway's own size
    limit applies. So those requests go to a chain of the same middlewares (``user_middleware``,
    ``HotRoutes`` innermost), built on the first request as Starlette builds its stack. Unless
    FastAPI's native telemetry is on (a global OpenTelemetry provider configured before the first
    request): then every request keeps its way through it.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.edge_paths: frozenset[MethodAndPath] = frozenset()
        self._edge: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (scope["method"], scope["path"]) in self.edge_paths:
            if self._edge is None:
                self._edge = self._build_edge()
            if self._edge is not self:
                scope["app"] = self
                await self._edge(scope, receive, send)
                return
        await super().__call__(scope, receive, send)

    def _build_edge(self) -> ASGIApp:
        if self._native_telemetry.enabled():
            return self
        app: ASGIApp = self.router  # not reached: only exact hot paths enter the chain
        for cls, args, kwargs in reversed(self.user_middleware):
            app = cls(app, *args, **kwargs)
        return app
