"""Approval rules as an admin writes them on the Tools page, one per line:

    path starts with /tmp/          (auto-approve)
    mode is one of dry_run, preview (auto-approve)
    amount > 1000                   (approval above)

Parsed into the API's ``ApprovalRules``, and written back the same way to fill the form.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from governance import ApprovalRules
from llm_service.errors import InvalidRequest

_PREFIX = " starts with "
_ONE_OF = " is one of "


def _scalar(text: str) -> Any:
    """`true`, `3` and `null` as JSON; anything else as the string it is."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if value is None or isinstance(value, bool | int | float | str) else text


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _auto_approve(line: str) -> dict[str, Any]:
    if _PREFIX in line:
        argument, prefix = line.split(_PREFIX, 1)
        return {"argument": argument.strip(), "prefix": prefix.strip()}
    if _ONE_OF in line:
        argument, values = line.split(_ONE_OF, 1)
        options = [_scalar(value.strip()) for value in values.split(",") if value.strip()]
        return {"argument": argument.strip(), "one_of": options}
    raise InvalidRequest(
        f"Cannot read `{line}`: write `<argument> starts with <text>` or "
        "`<argument> is one of <a>, <b>`.",
        param="auto_approve",
    )


def _above(line: str) -> dict[str, Any]:
    argument, sep, value = line.partition(">")
    try:
        if not sep:
            raise ValueError
        return {"argument": argument.strip(), "above": float(value)}
    except ValueError:
        raise InvalidRequest(
            f"Cannot read `{line}`: write `<argument> > <number>`.", param="approval_above"
        ) from None


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def parse_rules(auto_approve: str, approval_above: str, approvers: int) -> ApprovalRules:
    data = {
        "auto_approve": [_auto_approve(line) for line in _lines(auto_approve)],
        "approval_above": [_above(line) for line in _lines(approval_above)],
        "approvers": approvers,
    }
    try:
        return ApprovalRules.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise InvalidRequest(f"{where}: {error['msg']}", param="approval_rules") from None


def auto_approve_lines(rules: dict[str, Any] | None) -> str:
    lines = []
    for rule in (rules or {}).get("auto_approve", []):
        if rule.get("prefix") is not None:
            lines.append(f"{rule['argument']}{_PREFIX}{rule['prefix']}")
        else:
            options = ", ".join(_shown(option) for option in rule["one_of"])
            lines.append(f"{rule['argument']}{_ONE_OF}{options}")
    return "\n".join(lines)


def approval_above_lines(rules: dict[str, Any] | None) -> str:
    return "\n".join(
        f"{rule['argument']} > {rule['above']:g}"
        for rule in (rules or {}).get("approval_above", [])
    )
