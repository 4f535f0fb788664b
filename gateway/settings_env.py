"""Which GATEWAY_* variables exist, and which one a bad setting came from."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence

ENV_PREFIX = "GATEWAY_"
NESTED = "__"


def unknown_variables(environ: Mapping[str, str], fields: Iterable[str]) -> list[str]:
    """A sentence for each GATEWAY_* variable that sets nothing (a typo is otherwise silent)."""
    known = [ENV_PREFIX + field.upper() for field in fields]
    problems = []
    for name in sorted(environ):
        upper = name.upper()
        if not upper.startswith(ENV_PREFIX):
            continue
        top = upper.split(NESTED, 1)[0]
        if top in known:
            continue
        guess = difflib.get_close_matches(top, known, n=1)
        hint = f" (did you mean {guess[0]}?)" if guess else ""
        problems.append(f"unknown environment variable {name}{hint}")
    return problems


def source_variable(loc: Sequence[str], environ: Mapping[str, str]) -> str | None:
    """The variable that set the value at ``loc``, if one did: the most specific one set."""
    names = {name.upper(): name for name in environ}
    for depth in range(len(loc), 0, -1):
        candidate = ENV_PREFIX + NESTED.join(loc[:depth]).upper()
        if candidate in names:
            return names[candidate]
    return None
