"""A side-by-side line diff of two tool definitions, as rows a template renders (escaped)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from gateway.admin.ui.rendering import pretty_json


@dataclass(frozen=True, slots=True)
class DiffRow:
    old: str | None
    new: str | None
    kind: str  # same | changed | added | removed


def side_by_side(old: dict[str, Any] | None, new: dict[str, Any]) -> list[DiffRow]:
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
