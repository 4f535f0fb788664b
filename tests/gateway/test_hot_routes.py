"""Hot routes: served past FastAPI's router (exact paths past its outer layers too, by
``GatewayApp``), answered and failed exactly as FastAPI would."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI, Request
from starlette.responses import PlainTextResponse, Response

from gateway.errors import install_error_handlers
from gateway.hot_routes import GatewayApp, HotRoutes, documented_routes
from gateway.middleware import RequestContextMiddleware
from llm_service.errors import ModelNotFound


async def _fast(request: Request) -> Response:
    route = request.scope["route"]
    return PlainTextResponse(f"hot, documented by {route.name}")


async def _item(request: Request) -> Response:
    return PlainTextResponse(f"item {request.path_params['item_id']}")


async def _refusing(request: Request) -> Response:
    raise ModelNotFound("The model `x` does not exist.", param="model")


async def _broken(request: Request) -> Response:
    raise RuntimeError("secret internals")


def _app() -> FastAPI:
    app = GatewayApp()
    install_error_handlers(app)
    for path in ("/fast", "/refusing", "/broken"):

        @app.post(path, name=path.strip("/"))
        async def declared() -> Response:
            raise AssertionError("a hot route's declaration is never called")

    @app.get("/fast")
    async def slow_neighbour() -> Response:
        return PlainTextResponse("through FastAPI")

    @app.post("/items/{item_id}/parts", name="item")
    async def declared_item(item_id: str) -> Response:
        raise AssertionError("a hot route's declaration is never called")

    @app.get("/items/{item_id}/parts")
    async def item_neighbour(item_id: str) -> Response:
        return PlainTextResponse(f"through FastAPI {item_id}")

    hot = {
        ("POST", "/fast"): _fast,
        ("POST", "/refusing"): _refusing,
        ("POST", "/broken"): _broken,
        ("POST", "/items/{item_id}/parts"): _item,
    }
    app.add_middleware(HotRoutes, routes=documented_routes(app, hot))
    app.add_middleware(RequestContextMiddleware)
    app.edge_paths = frozenset(key for key in hot if "{" not in key[1])
    return app


async def _call(method: str, path: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=_app(), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        return await client.request(method, path)


async def test_a_hot_route_is_served_with_its_documenting_route_in_scope() -> None:
    response = await _call("POST", "/fast")

    assert response.text == "hot, documented by fast"


async def test_an_exact_hot_path_still_passes_the_gateway_middlewares() -> None:
    response = await _call("POST", "/fast")

    assert len(response.headers["x-request-id"]) == 32


async def test_other_methods_and_paths_go_through_fastapi() -> None:
    assert (await _call("GET", "/fast")).text == "through FastAPI"
    assert (await _call("POST", "/elsewhere")).status_code == 404


async def test_a_path_with_parameters_is_hot_and_gets_its_path_params() -> None:
    assert (await _call("POST", "/items/a7/parts")).text == "item a7"
    assert (await _call("GET", "/items/a7/parts")).text == "through FastAPI a7"
    assert (await _call("POST", "/items/a7/parts/more")).status_code == 404


async def test_a_gateway_error_gets_the_same_body_as_through_fastapi() -> None:
    response = await _call("POST", "/refusing")

    assert response.status_code == 404
    assert response.json()["error"] == {
        "message": "The model `x` does not exist.",
        "type": "invalid_request_error",
        "param": "model",
        "code": "model_not_found",
    }


async def test_an_unexpected_error_is_a_500_that_quotes_the_request_id_and_hides_the_cause() -> (
    None
):
    response = await _call("POST", "/broken")

    assert response.status_code == 500
    error = response.json()["error"]
    assert error["type"] == "api_error"
    assert response.headers["x-request-id"] in error["message"]
    assert "secret internals" not in response.text


def test_a_hot_route_without_a_declaration_is_refused_at_startup() -> None:
    with pytest.raises(LookupError, match="POST /undeclared"):
        documented_routes(FastAPI(), {("POST", "/undeclared"): _fast})
