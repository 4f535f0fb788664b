"""What clients send before their first real request: ``HEAD /`` (Claude Code checks the base
URL answers) and ``OPTIONS`` on any path (HTTP's own question: which methods does it take?).

Neither needs a key nor tells anything but that the gateway is there and which methods a path
takes. Cross-origin (CORS) requests are not served: browsers get no ``Access-Control-*`` headers.
"""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response
from starlette.routing import Match
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.errors import flat_routes
from gateway.responses import json_response

router = APIRouter(tags=["health"])


@router.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
async def root() -> Response:
    return json_response({"status": "ok"})


class AllowedMethods:
    """ASGI middleware: ``OPTIONS`` on a path the gateway serves is ``204`` with ``Allow``
    naming its methods; on any other path the app answers (``404``). Not a route: a catch-all
    route would turn every unknown path's 404 into a 405."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        methods = set()
        if scope["type"] == "http" and scope["method"] == "OPTIONS":
            methods = _methods_at(scope)
        if not methods:
            await self.app(scope, receive, send)
            return
        allow = ", ".join(sorted(methods | {"OPTIONS"}))
        await Response(status_code=204, headers={"allow": allow})(scope, receive, send)


def _methods_at(scope: Scope) -> set[str]:
    methods: set[str] = set()
    for route in flat_routes(scope["app"].router.routes):
        route_methods = getattr(route, "methods", None)
        if route_methods and route.matches({**scope, "method": "GET"})[0] != Match.NONE:
            methods |= route_methods
    return methods
