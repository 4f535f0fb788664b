"""The admin web UI's routes, and its two static files."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import FileResponse
from starlette.exceptions import HTTPException

from gateway.admin_ui import pages, queue, reviews, signin
from gateway.admin_ui.rendering import STATIC_FILES


async def static_file(name: str) -> FileResponse:
    entry = STATIC_FILES.get(name)
    if entry is None:
        raise HTTPException(404)
    media_type, path = entry
    return FileResponse(path, media_type=media_type, headers={"cache-control": "no-cache"})


def admin_ui_router() -> APIRouter:
    router = APIRouter()
    for module in (signin, queue, reviews, pages):
        router.include_router(module.router)
    router.add_api_route("/admin/static/{name}", static_file, include_in_schema=False)
    return router
