"""The admin web UI's routes, and its two static files."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse
from starlette.exceptions import HTTPException
from starlette.responses import RedirectResponse, Response

from admin.ui import (
    pages,
    queue,
    reviews,
    server_connect,
    servers_page,
    signin,
    spend_pages,
    sso_signin,
    tools_page,
    transcript_page,
    webhooks_page,
)
from admin.ui.rendering import STATIC_FILES
from admin.ui.security import SecuredRoute, error_page


async def static_file(name: str) -> FileResponse:
    entry = STATIC_FILES.get(name)
    if entry is None:
        raise HTTPException(404)
    media_type, path = entry
    return FileResponse(path, media_type=media_type, headers={"cache-control": "no-cache"})


async def not_found(request: Request, rest: str) -> Response:
    """Any other address under /admin (or a form's address opened as a page): a page that says
    so, not the API's JSON."""
    if not rest:
        return RedirectResponse("/admin", status_code=307)
    return await error_page(request, "There is no admin page at this address.", 404, "Not found")


def admin_ui_router() -> APIRouter:
    router = APIRouter()
    for module in (
        signin,
        sso_signin,
        queue,
        reviews,
        tools_page,
        servers_page,
        server_connect,
        spend_pages,
        pages,
        webhooks_page,
        transcript_page,
    ):
        router.include_router(module.router)
    router.add_api_route("/admin/static/{name}", static_file, include_in_schema=False)
    # Last, so that it only answers what no route above matched.
    catch_all = APIRouter(route_class=SecuredRoute, include_in_schema=False)
    catch_all.add_api_route("/admin/{rest:path}", not_found, methods=["GET", "POST"])
    router.include_router(catch_all)
    return router
