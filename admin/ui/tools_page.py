"""The Tools page: every tool with its policy, which an admin edits here (enable or disable,
roles, approval, approval rules, guardrails) through the same audited change as
``PUT /v1/admin/tools/{name}/policy``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Form, Request
from pydantic import ValidationError
from starlette.responses import RedirectResponse, Response

from admin.api.compatibility import configured_providers, report
from admin.api.tools import change_policy, tools_json
from admin.ui.rendering import render
from admin.ui.rule_form import approval_above_lines, auto_approve_lines, parse_rules
from admin.ui.security import SecuredRoute, SignedIn, check_csrf
from admin.ui.sessions import SessionInfo
from gateway.auth import ServicesDep
from gateway.errors import report_of
from gateway.services import Services
from guardrails import Detector, ToolGuardrails
from llm_service.errors import GatewayError

router = APIRouter(prefix="/admin", route_class=SecuredRoute, include_in_schema=False)

NOTICES = {
    "saved": "Policy saved: it applies at once here, and on other replicas within seconds.",
    "unchanged": "Nothing changed.",
    "reset": "The tool follows the config file again.",
    "rules": "Approval rules saved: they apply at once here, and on other replicas within seconds.",
    "guardrails": "Guardrails saved: they apply at once here, and on other replicas in seconds.",
}
# The guardrail selects of a tool's form: one per detector and direction, named `detector__dir`.
GUARDRAIL_FIELDS = [(d, direction) for d in Detector for direction in ("arguments", "results")]


@dataclass(frozen=True, slots=True)
class Refused:
    """A refused policy edit: the page shows the reason and the tool's form as it was posted."""

    tool: str
    message: str
    status_code: int
    roles: str | None = None
    requires_approval: bool | None = None


def _tools_page(
    request: Request, services: Services, session: SessionInfo, refused: Refused | None = None
) -> Response:
    providers = configured_providers(services)
    context = {
        "tools": tools_json(services.tools),
        "providers": providers,
        "compatibility": report(services.tools.all_tools(), providers),
        "notice": NOTICES.get(request.query_params.get("done", "")),
        "refused": refused,
        "error": refused.message if refused else None,
        "auto_approve_lines": auto_approve_lines,
        "approval_above_lines": approval_above_lines,
    }
    return render(request, "tools.html", context, session, refused.status_code if refused else 200)


async def _changed(
    request: Request,
    *,
    services: Services,
    session: SessionInfo,
    name: str,
    changes: dict[str, Any],
    posted: dict[str, Any] | None = None,
) -> Response:
    try:
        await change_policy(services, name, changes, session.key_id)
    except GatewayError as exc:
        # Which tool was refused, since not every message names it (e.g. a bad role).
        refused = Refused(name, f"`{name}`: {exc.message}", report_of(exc).status, **(posted or {}))
        return _tools_page(request, services, session, refused)
    done = "reset" if changes and all(v is None for v in changes.values()) else "saved"
    done = "rules" if list(changes) == ["approval_rules"] and changes["approval_rules"] else done
    done = "guardrails" if list(changes) == ["guardrails"] and changes["guardrails"] else done
    return RedirectResponse(f"/admin/tools?done={done}#tool-{name}", status_code=303)


@router.get("/tools")
async def tools_page(request: Request, services: ServicesDep, session: SignedIn) -> Response:
    return _tools_page(request, services, session)


@router.post("/tools/{name}/enabled")
async def set_tool_enabled(
    request: Request,
    name: str,
    *,
    services: ServicesDep,
    session: SignedIn,
    csrf_token: Annotated[str, Form(max_length=100)] = "",
    enabled: Annotated[bool, Form()] = True,
) -> Response:
    check_csrf(session, csrf_token)
    return await _changed(
        request, services=services, session=session, name=name, changes={"enabled": enabled}
    )


@router.post("/tools/{name}/policy")
async def edit_policy(
    request: Request,
    name: str,
    services: ServicesDep,
    session: SignedIn,
    *,
    roles: Annotated[str, Form(max_length=1000)] = "",
    requires_approval: Annotated[Literal["true", "false"], Form()],
    csrf_token: Annotated[str, Form(max_length=100)] = "",
) -> Response:
    """Only the fields the admin changed are stored: the others keep following the config."""
    check_csrf(session, csrf_token)
    # A tool held for review can have its policy set too.
    current = services.tools.tool(name)
    wanted_roles = roles.replace(",", " ").split()
    changes: dict[str, Any] = {}
    if current is None or set(wanted_roles) != set(current.roles):
        changes["roles"] = wanted_roles
    if current is None or (requires_approval == "true") != current.requires_approval:
        changes["requires_approval"] = requires_approval == "true"
    if not changes:
        return RedirectResponse(f"/admin/tools?done=unchanged#tool-{name}", status_code=303)
    posted = {"roles": roles, "requires_approval": requires_approval == "true"}
    return await _changed(
        request, services=services, session=session, name=name, changes=changes, posted=posted
    )


@router.post("/tools/{name}/policy/reset")
async def reset_policy(
    request: Request,
    name: str,
    services: ServicesDep,
    session: SignedIn,
    csrf_token: Annotated[str, Form(max_length=100)] = "",
) -> Response:
    check_csrf(session, csrf_token)
    changes = {
        "enabled": None,
        "roles": None,
        "requires_approval": None,
        "approval_rules": None,
        "guardrails": None,
    }
    return await _changed(request, services=services, session=session, name=name, changes=changes)


@router.post("/tools/{name}/rules")
async def edit_rules(
    request: Request,
    name: str,
    services: ServicesDep,
    session: SignedIn,
    *,
    auto_approve: Annotated[str, Form(max_length=5000)] = "",
    approval_above: Annotated[str, Form(max_length=5000)] = "",
    approvers: Annotated[Literal["1", "2"], Form()] = "1",
    csrf_token: Annotated[str, Form(max_length=100)] = "",
) -> Response:
    """The tool's approval rules, replacing the config file's (Reset hands them back)."""
    check_csrf(session, csrf_token)
    try:
        rules = parse_rules(auto_approve, approval_above, int(approvers))
    except GatewayError as exc:
        refused = Refused(name, f"`{name}`: {exc.message}", report_of(exc).status)
        return _tools_page(request, services, session, refused)
    changes: dict[str, Any] = {"approval_rules": rules.model_dump()}
    return await _changed(request, services=services, session=session, name=name, changes=changes)


@router.post("/tools/{name}/guardrails")
async def edit_guardrails(
    request: Request,
    name: str,
    services: ServicesDep,
    session: SignedIn,
    *,
    csrf_token: Annotated[str, Form(max_length=100)] = "",
) -> Response:
    """The admin's guardrail actions for the tool, over every config rule (a select left on
    "as configured" leaves that detector and direction to the config)."""
    check_csrf(session, csrf_token)
    form = await request.form()
    chosen: dict[str, dict[str, str]] = {}
    for detector, direction in GUARDRAIL_FIELDS:
        value = form.get(f"{detector.value}__{direction}")
        if isinstance(value, str) and value:
            chosen.setdefault(detector.value, {})[direction] = value
    try:
        actions = ToolGuardrails.model_validate(chosen).model_dump(mode="json") if chosen else None
    except ValidationError as exc:
        message = f"`{name}`: guardrails: {exc.errors()[0]['msg']}"
        return _tools_page(request, services, session, Refused(name, message, 400))
    changes: dict[str, Any] = {"guardrails": actions}
    return await _changed(request, services=services, session=session, name=name, changes=changes)
