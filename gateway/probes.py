"""What clients send before their first real request: ``HEAD /`` (Claude Code checks the base
URL answers) and ``OPTIONS`` on any path (HTTP's own question: which methods does it take?).

Neither needs a key nor tells anything but that the gateway is there and which methods a path
takes. Cross-origin (CORS) requests are not served: browsers get no ``Access-Control-*`` headers.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.routing import Match

from gateway.errors import flat_routes
from gateway.responses import json_response

router = APIRouter(tags=["health"])


@router.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
async def root() -> Response:
    return json_response({"status": "ok"})


@router.options("/{path:path}", include_in_schema=False)
async def allowed_methods(request: Request) -> Response:
    """``204`` with ``Allow`` naming the path's methods; ``404`` for a path nothing serves."""
    methods: set[str] = set()
    for route in flat_routes(request.app.router.routes):
        route_methods = getattr(route, "methods", None)
        if route_methods and "OPTIONS" not in route_methods:
            match, _ = route.matches({**request.scope, "method": "GET"})
            if match != Match.NONE:
                methods |= route_methods
    if not methods:
        raise HTTPException(404, "Not Found")
    allow = ", ".join(sorted(methods | {"OPTIONS"}))
    return Response(status_code=204, headers={"allow": allow})
