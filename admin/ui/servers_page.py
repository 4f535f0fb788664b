"""The Servers page: every MCP server with its status; runtime servers added, changed and
removed through the same service as ``/v1/admin/servers`` (so its allow-lists apply), config
file servers shown read-only."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Form, Request
from starlette.responses import RedirectResponse, Response

from admin.ui.rendering import render
from admin.ui.security import SecuredRoute, SignedIn, check_csrf
from admin.ui.server_form import TRANSPORTS, ServerForm
from admin.ui.sessions import SessionInfo
from gateway.auth import ServicesDep
from gateway.errors import report_of
from gateway.services import Services
from llm_service.errors import GatewayError
from mcp_client.config import MCPServerConfig
from tool_servers.grants import GrantSummary, uses_consent

router = APIRouter(prefix="/admin", route_class=SecuredRoute, include_in_schema=False)

NOTICES = {
    "added": "Server added. Its state below is what this replica found when it connected.",
    "changed": "Server changed and restarted with the new settings.",
    "removed": "Server removed: its tools are gone from the catalog.",
    "connected": "Server connected: its tokens are stored (sealed) for every replica.",
}


@dataclass(frozen=True, slots=True)
class ServerRow:
    name: str
    origin: Literal["config", "runtime", "built-in"]
    status: dict[str, Any]
    target: str
    form: ServerForm | None = None  # runtime servers only: the edit form's values
    # Authorization-code servers only: "Connect" / "Reconnect", and the grant if there is one.
    consent: bool = False
    grant: GrantSummary | None = None


@dataclass(frozen=True, slots=True)
class Rejected:
    """A refused form, shown again with the admin's input and the reason."""

    message: str
    status_code: int
    form: ServerForm | None  # None: the stored settings stay in the form
    editing: str | None = None  # the server being changed; None: the add form


def _target(config: MCPServerConfig) -> str:
    if config.transport == "stdio":
        return shlex.join([config.command or "", *config.args])
    return config.url or ""


async def _rows(services: Services) -> list[ServerRow]:
    status = {name: health.as_dict() for name, health in services.tool_servers.status().items()}
    configured = {server.name: server for server in services.settings.mcp_servers}
    stored = await services.tool_servers.stored()
    consenting = {
        name: config for name, config in {**stored, **configured}.items() if uses_consent(config)
    }
    grants = services.tool_servers.grants
    summaries = await grants.summaries(consenting) if grants and grants.has_key else {}
    rows: list[ServerRow] = []
    for name in sorted({*status, *configured, *stored}):
        health = status.get(name, {})
        consent, grant = name in consenting, summaries.get(name)
        if name in configured:
            target = _target(configured[name])
            rows.append(ServerRow(name, "config", health, target, None, consent, grant))
        elif name in stored:
            config = stored[name]
            form = ServerForm.of(config)
            rows.append(ServerRow(name, "runtime", health, _target(config), form, consent, grant))
        else:
            rows.append(ServerRow(name, "built-in", health, ""))
    return rows


async def _servers_page(
    request: Request, services: Services, session: SessionInfo, rejected: Rejected | None = None
) -> Response:
    catalog_settings = services.settings.tool_catalog
    context = {
        "rows": await _rows(services),
        "transports": TRANSPORTS,
        "allowed_commands": [shlex.join(line) for line in catalog_settings.stdio_allow_list],
        "allowed_urls": catalog_settings.http_allow_list,
        "add_form": (
            rejected.form
            if rejected and rejected.form and rejected.editing is None
            else ServerForm(roles="user")
        ),
        "rejected": rejected,
        "error": rejected.message if rejected else None,
        "notice": NOTICES.get(request.query_params.get("done", "")),
    }
    status_code = rejected.status_code if rejected else 200
    return render(request, "servers.html", context, session, status_code)


@router.get("/servers")
async def servers_page(request: Request, services: ServicesDep, session: SignedIn) -> Response:
    return await _servers_page(request, services, session)


@router.post("/servers")
async def add_server(
    request: Request,
    services: ServicesDep,
    session: SignedIn,
    form: Annotated[ServerForm, Form()],
    csrf_token: Annotated[str, Form(max_length=100)] = "",
) -> Response:
    check_csrf(session, csrf_token)
    try:
        await services.tool_servers.put(form.to_config(), session.key_id, create=True)
    except GatewayError as exc:
        rejected = Rejected(exc.message, report_of(exc).status, form)
        return await _servers_page(request, services, session, rejected)
    return RedirectResponse("/admin/servers?done=added", status_code=303)


@router.post("/servers/{name}")
async def change_server(
    request: Request,
    name: str,
    services: ServicesDep,
    *,
    session: SignedIn,
    form: Annotated[ServerForm, Form()],
    csrf_token: Annotated[str, Form(max_length=100)] = "",
) -> Response:
    check_csrf(session, csrf_token)
    form = form.model_copy(update={"name": name})  # the path names the server, not the form
    try:
        stored = (await services.tool_servers.stored()).get(name)
        await services.tool_servers.put(form.to_config(stored), session.key_id, create=False)
    except GatewayError as exc:
        rejected = Rejected(exc.message, report_of(exc).status, form, editing=name)
        return await _servers_page(request, services, session, rejected)
    return RedirectResponse("/admin/servers?done=changed", status_code=303)


@router.post("/servers/{name}/delete")
async def delete_server(
    request: Request,
    name: str,
    services: ServicesDep,
    session: SignedIn,
    csrf_token: Annotated[str, Form(max_length=100)] = "",
) -> Response:
    check_csrf(session, csrf_token)
    try:
        await services.tool_servers.delete(name, session.key_id)
    except GatewayError as exc:
        rejected = Rejected(exc.message, report_of(exc).status, None, editing=name)
        return await _servers_page(request, services, session, rejected)
    return RedirectResponse("/admin/servers?done=removed", status_code=303)
