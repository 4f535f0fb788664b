"""Jinja2 templates (autoescaped), what they render beyond plain values (JSON, times, names in
backticks, a side-by-side diff), and the two static files the pages use."""

from __future__ import annotations

import difflib
import json
import shlex
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from fastapi.templating import Jinja2Templates
from markupsafe import Markup, escape
from starlette.requests import Request
from starlette.responses import Response

from admin.ui.sessions import SessionInfo
from chat_service.tool_call_view import CallState, ToolCallView
from db.base import utcnow

HERE = Path(__file__).parent
STATIC_FILES = {
    "admin.css": ("text/css", HERE / "static" / "admin.css"),
    "admin.js": ("text/javascript", HERE / "static" / "admin.js"),
}


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


CODE = Markup("<code>{}</code>")


def ticks(text: str) -> Markup:
    """Messages mark names with backticks (as the API's errors do): shown as code, escaped."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: show the text as it is
        return escape(text)
    return Markup("").join(
        CODE.format(part) if index % 2 else escape(part) for index, part in enumerate(parts)
    )


def when(value: datetime | str | None) -> str:
    if value is None:
        return "—"
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


_NOT_APPROVED = {
    CallState.REJECTED: "rejected",
    CallState.EXPIRED: "expired",
    CallState.DENIED_BY_POLICY: "denied by policy",
}


def decision(call: ToolCallView) -> str:
    """What was decided on a held call, whatever state it moved on to since."""
    return _NOT_APPROVED.get(call.state, "approved")


@cache
def templates() -> Jinja2Templates:
    built = Jinja2Templates(directory=HERE / "templates")
    built.env.filters["pretty_json"] = pretty_json
    built.env.filters["when"] = when
    built.env.filters["decision"] = decision
    built.env.filters["command_line"] = shlex.join
    built.env.filters["ticks"] = ticks
    # Pages decide "expired" by the server's clock too, so it holds without JavaScript.
    built.env.globals["now"] = utcnow
    return built


def render(
    request: Request,
    name: str,
    context: dict[str, Any],
    session: SessionInfo | None = None,
    status_code: int = 200,
) -> Response:
    return templates().TemplateResponse(
        request, name, {"session": session, **context}, status_code=status_code
    )


def render_fragment(name: str, context: dict[str, Any]) -> str:
    return templates().get_template(name).render(context)


@dataclass(frozen=True, slots=True)
class DiffRow:
    old: str | None
    new: str | None
    kind: str  # same | changed | added | removed


def side_by_side(old: dict[str, Any] | None, new: dict[str, Any]) -> list[DiffRow]:
    """A line diff of two definitions (tool pins), as rows a template renders (escaped)."""
    old_lines = pretty_json(old).splitlines() if old is not None else []
    new_lines = pretty_json(new).splitlines()
    rows: list[DiffRow] = []
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for tag, a1, a2, b1, b2 in matcher.get_opcodes():
        left, right = old_lines[a1:a2], new_lines[b1:b2]
        if tag == "equal":
            rows += [DiffRow(line, line, "same") for line in left]
            continue
        for index in range(max(len(left), len(right))):
            before = left[index] if index < len(left) else None
            after = right[index] if index < len(right) else None
            kind = (
                "changed"
                if before is not None and after is not None
                else ("added" if before is None else "removed")
            )
            rows.append(DiffRow(before, after, kind))
    return rows
