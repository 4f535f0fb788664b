"""Which GATEWAY_* variables exist, and which one a bad setting came from."""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

ENV_PREFIX = "GATEWAY_"
NESTED = "__"


def unknown_variables(
    environ: Mapping[str, str], fields: Iterable[str], referenced: Collection[str] = ()
) -> list[str]:
    """A sentence for each GATEWAY_* variable that sets nothing (a typo is otherwise silent)."""
    known = [ENV_PREFIX + field.upper() for field in fields]
    problems = []
    for name in sorted(environ):
        upper = name.upper()
        if not upper.startswith(ENV_PREFIX) or name in referenced:
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


def referenced_variables(settings: BaseModel) -> set[str]:
    """Every variable the config names: values of ``*_env`` fields (``api_key_env``,
    ``secret_env``; ``headers_env`` maps header names to variable names)."""
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str) and key.endswith("_env"):
                    found.update(_names(item))
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(settings.model_dump())
    return found


def _names(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [v for v in value.values() if isinstance(v, str)]
    return []
