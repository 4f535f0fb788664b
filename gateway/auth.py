"""Authenticating the caller: an API key in ``Authorization: Bearer`` or ``x-api-key``."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from accounts.principals import Principal
from gateway.context import request_context
from gateway.errors import AuthenticationFailed, PermissionDenied
from gateway.services import Services, get_services
from llm_service.config import ModelConfig
from llm_service.registry import role_allows


def _presented_key(request: Request) -> str | None:
    authorization = request.headers.get("authorization")
    if authorization:
        scheme, _, credentials = authorization.partition(" ")
        if scheme.lower() == "bearer" and credentials.strip():
            return credentials.strip()
        return None
    return request.headers.get("x-api-key") or None


async def authenticate(
    request: Request, services: Annotated[Services, Depends(get_services)]
) -> Principal:
    key = _presented_key(request)
    if key is None:
        raise AuthenticationFailed("Missing API key. Send it as `Authorization: Bearer <key>`.")
    principal = await services.keys.authenticate(key)
    if principal is None:
        raise AuthenticationFailed("Invalid or revoked API key.")
    context = request_context(request)
    context.key_id = principal.key_id
    context.key_name = principal.name
    context.team = principal.team
    return principal


async def presents_admin_key(request: Request, services: Services) -> bool:
    """Whether the request carries a valid admin key; never refuses (for routes that show more
    to admins, such as /readyz, and answer others too)."""
    key = _presented_key(request)
    if key is None:
        return False
    principal = await services.keys.authenticate(key)
    return principal is not None and principal.is_admin


async def require_admin(principal: Annotated[Principal, Depends(authenticate)]) -> Principal:
    if not principal.is_admin:
        raise PermissionDenied("This endpoint needs an API key with the `admin` role.")
    return principal


CurrentPrincipal = Annotated[Principal, Depends(authenticate)]
AdminPrincipal = Annotated[Principal, Depends(require_admin)]
ServicesDep = Annotated[Services, Depends(get_services)]


def authorize_model(services: Services, principal: Principal, name: str) -> ModelConfig:
    """The model's config, once this key is allowed to use it (404 unknown, 403 not allowed)."""
    config = services.registry.get(name).config
    if not role_allows(config, principal.roles) or not principal.may_use(name):
        raise PermissionDenied(f"This API key may not use the model `{name}`.", param="model")
    return config
