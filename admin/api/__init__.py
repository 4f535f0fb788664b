"""The admin JSON API under ``/v1/admin`` (role ``admin`` on every endpoint)."""

from __future__ import annotations

from fastapi import APIRouter

from admin.api import (
    approvals,
    audit,
    compatibility,
    keys,
    reviews,
    servers,
    teams,
    tools,
    usage,
    webhooks,
)


def admin_router() -> APIRouter:
    router = APIRouter()
    for module in (
        keys,
        teams,
        audit,
        usage,
        compatibility,
        tools,
        servers,
        reviews,
        approvals,
        webhooks,
    ):
        router.include_router(module.router)
    return router
