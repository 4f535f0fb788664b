"""API keys: create (the key is returned this once), list, change settings, revoke."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from fastapi import APIRouter
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field
from starlette.responses import Response

from accounts.errors import KeyNotFound, OwnKeyRevocation
from accounts.keys import KeyInfo
from accounts.limits.config import KeyLimits
from admin import RowId
from admin.api.teams import TEAM_PATTERN
from gateway.auth import AdminPrincipal, ServicesDep
from gateway.responses import json_response
from llm_service.errors import InvalidRequest

router = APIRouter(prefix="/v1/admin/keys", tags=["admin"])

ROLE_PATTERN = r"^[a-z][a-z0-9_-]{0,63}$"


class KeySettings(BaseModel):
    """The settings a key may be created with and changed later."""

    model_config = ConfigDict(extra="forbid")

    team: str | None = Field(None, pattern=TEAM_PATTERN)
    expires_at: AwareDatetime | None = None
    allowed_models: list[str] | None = Field(None, max_length=500)
    limits: KeyLimits | None = None


class NewKey(KeySettings):
    name: str = Field(min_length=1, max_length=200)
    roles: list[str] = Field(min_length=1, max_length=20)
    owner: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="the person or service the key belongs to (default: its name)",
    )


class KeyChanges(KeySettings):
    """``PATCH`` body: a field left out keeps its value; ``null`` clears it (not name/owner)."""

    name: str | None = Field(None, min_length=1, max_length=200)
    owner: str | None = Field(None, min_length=1, max_length=200)


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def key_json(info: KeyInfo) -> dict[str, Any]:
    return {
        "object": "api_key",
        "id": info.id,
        "name": info.name,
        "owner": info.owner,
        "prefix": info.prefix,
        "roles": list(info.roles),
        "revoked": info.revoked,
        "team": info.team,
        "created_at": _iso(info.created_at),
        "last_used_at": _iso(info.last_used_at),
        "expires_at": _iso(info.expires_at),
        "allowed_models": list(info.allowed_models) if info.allowed_models is not None else None,
        "limits": info.limits.model_dump() if info.limits is not None else None,
    }


def stored_changes(
    body: KeySettings, known_models: Iterable[str], fields: Iterable[str] | None = None
) -> dict[str, object]:
    """The columns to set (those the body set, or ``fields``), checked: 400 naming the field."""
    changes: dict[str, object] = {}
    for name in sorted(body.model_fields_set if fields is None else fields):
        value = getattr(body, name)
        if name in ("name", "owner"):
            if value is None or not value.strip():
                raise InvalidRequest(f"`{name}` cannot be empty.", param=name)
            value = value.strip()
        elif name == "allowed_models" and value is not None:
            unknown = sorted(set(value) - set(known_models))
            if unknown:
                raise InvalidRequest(f"Unknown models: {', '.join(unknown)}.", param=name)
            value = sorted(set(value))
        elif name == "limits" and value is not None:
            value = value.model_dump() if not value.unlimited else None
        changes[name] = value
    return changes


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
    models = [model.name for model in services.settings.models]
    settings = stored_changes(body, models, body.model_fields_set & set(KeySettings.model_fields))
    key, info = await services.keys.create(
        body.name.strip(),
        validate_roles(body.roles),
        owner or None,
        principal.key_id,
        settings=settings,
    )
    return json_response({**key_json(info), "key": key}, status=201)


@router.patch("/{key_id}")
async def change_key(
    key_id: RowId, body: KeyChanges, principal: AdminPrincipal, services: ServicesDep
) -> Response:
    models = [model.name for model in services.settings.models]
    info = await services.keys.change(key_id, stored_changes(body, models), principal.key_id)
    if info is None:
        raise KeyNotFound(f"No active key with id {key_id}.", param="key_id")
    return json_response(key_json(info))


@router.post("/{key_id}/revoke")
async def revoke_key(key_id: RowId, principal: AdminPrincipal, services: ServicesDep) -> Response:
    if key_id == principal.key_id:
        # As the admin UI refuses it: an admin revoking the key in use locks itself out.
        raise OwnKeyRevocation("You cannot revoke the key you are using.", param="key_id")
    if not await services.keys.revoke(key_id, principal.key_id):
        raise KeyNotFound(f"No active key with id {key_id}.", param="key_id")
    return json_response({"object": "api_key", "id": key_id, "revoked": True})
