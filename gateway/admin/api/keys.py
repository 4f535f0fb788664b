"""API keys: create (the key is returned this once), list, revoke."""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from gateway.admin import RowId
from gateway.auth import AdminPrincipal, ServicesDep
from gateway.keys import KeyInfo
from gateway.responses import json_response
from llm_service.errors import GatewayError, InvalidRequest

router = APIRouter(prefix="/v1/admin/keys", tags=["admin"])

ROLE_PATTERN = r"^[a-z][a-z0-9_-]{0,63}$"


class KeyNotFound(GatewayError):
    status_code = 404
    error_type = "invalid_request_error"
    code = "key_not_found"


class NewKey(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    roles: list[str] = Field(min_length=1, max_length=20)
    owner: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="the person or service the key belongs to (default: its name)",
    )


def key_json(info: KeyInfo) -> dict[str, Any]:
    return {
        "object": "api_key",
        "id": info.id,
        "name": info.name,
        "owner": info.owner,
        "prefix": info.prefix,
        "roles": list(info.roles),
        "revoked": info.revoked,
    }


def validate_roles(roles: list[str]) -> list[str]:
    cleaned = sorted({role.strip() for role in roles if role.strip()})
    bad = [role for role in cleaned if not re.fullmatch(ROLE_PATTERN, role)]
    if not cleaned or bad:
        raise InvalidRequest(
            "Roles must be lowercase words (letters, digits, `-`, `_`).", param="roles"
        )
    return cleaned


@router.get("")
async def list_keys(principal: AdminPrincipal, services: ServicesDep) -> Response:
    keys = await services.keys.list()
    return json_response({"object": "list", "data": [key_json(info) for info in keys]})


@router.post("")
async def create_key(body: NewKey, principal: AdminPrincipal, services: ServicesDep) -> Response:
    owner = body.owner.strip() if body.owner else None
    key, info = await services.keys.create(
        body.name.strip(), validate_roles(body.roles), owner or None, principal.key_id
    )
    return json_response({**key_json(info), "key": key}, status=201)


@router.post("/{key_id}/revoke")
async def revoke_key(key_id: RowId, principal: AdminPrincipal, services: ServicesDep) -> Response:
    if not await services.keys.revoke(key_id, principal.key_id):
        raise KeyNotFound(f"No active key with id {key_id}.", param="key_id")
    return json_response({"object": "api_key", "id": key_id, "revoked": True})
