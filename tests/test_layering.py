"""Imports between our packages point one way (A -> B: A imports B), read from the source.

Every import statement counts, also those inside functions (where lazy imports hide) and under
``TYPE_CHECKING``: each is a dependency all the same. tests/, bench/ and clients/ (the client
matrix) are outside the rule.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE_THE_RULE = frozenset({"tests", "bench", "clients"})

# Each package of ours, and the packages of ours its modules may import (their own aside).
# server -> admin -> gateway (the two HTTP edges; gateway imports neither above it);
# gateway -> notifications -> accounts -> governance; gateway -> chat_service -> governance ->
# mcp_client; gateway -> tool_servers -> mcp_client (governance does not know tool_servers);
# chat_service -> llm_service; adapters -> llm_service (llm_service never imports adapters);
# governance -> guardrails (pure: imports none of the others);
# db below all; mcp_client imports none of the others; migrations only db (and the CLI runs them).
_BELOW_THE_EDGES = frozenset(
    {
        "notifications",
        "accounts",
        "chat_service",
        "governance",
        "guardrails",
        "tool_servers",
        "llm_service",
        "mcp_client",
        "db",
    }
)
MAY_IMPORT: dict[str, frozenset[str]] = {
    # The process: the CLI, the app assembled from both edges, uvicorn and its workers.
    "server": frozenset({"admin", "gateway", "migrations"}) | _BELOW_THE_EDGES,
    # The admin console (API and web UI) uses the product edge's keys, services and responses.
    "admin": frozenset({"gateway"}) | _BELOW_THE_EDGES,
    "gateway": frozenset(
        {
            "notifications",
            "accounts",
            "chat_service",
            "governance",
            "guardrails",
            "tool_servers",
            "llm_service",
            "mcp_client",
            "db",
            "migrations",
            "adapters",
        }
    ),
    "notifications": frozenset({"accounts", "chat_service", "governance", "db"}),
    "accounts": frozenset({"governance", "llm_service", "db"}),
    "chat_service": frozenset({"governance", "guardrails", "llm_service", "mcp_client", "db"}),
    "governance": frozenset({"guardrails", "llm_service", "mcp_client", "db"}),
    "guardrails": frozenset(),
    "tool_servers": frozenset({"llm_service", "mcp_client", "db"}),
    "adapters": frozenset({"llm_service", "db"}),
    "llm_service": frozenset({"db"}),
    "mcp_client": frozenset(),
    "migrations": frozenset({"db"}),
    "db": frozenset(),
}
# The app's wiring, where the model registry is assembled: the only modules that construct
# adapters, so the only ones that import them.
ADAPTER_WIRING = frozenset({"gateway.providers"})


@dataclass(frozen=True, slots=True)
class Import:
    module: str  # the imported module, absolute
    line: int


def imports_in(source: str, module: str, is_package: bool = False) -> Iterator[Import]:
    """Every module ``source`` (the text of ``module``) imports, wherever the statement is."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against the importing module's package
                parts = package.split(".")
                anchor = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            # `from a import b` may name a module b: a -> a.b is no weaker than a -> a.
            yield Import(base, node.lineno)


def top_level_packages() -> list[str]:
    return sorted(
        path.parent.name
        for path in ROOT.glob("*/__init__.py")
        if path.parent.name not in OUTSIDE_THE_RULE
    )


def module_files(package: str) -> Iterator[tuple[str, Path]]:
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def violations(module: str, path: Path) -> Iterator[str]:
    package = module.partition(".")[0]
    source = path.read_text(encoding="utf-8")
    for found in imports_in(source, module, path.name == "__init__.py"):
        target = found.module.partition(".")[0]
        if target == package or target not in MAY_IMPORT:
            continue  # itself, or not ours
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        where = f"{shown}:{found.line} imports {found.module}"
        if target not in MAY_IMPORT[package]:
            yield f"{where}: {package} may not import {target}"
        elif target == "adapters" and module not in ADAPTER_WIRING:
            yield f"{where}: only the wiring ({', '.join(sorted(ADAPTER_WIRING))}) imports adapters"


def test_every_package_of_ours_has_its_place_in_the_rule() -> None:
    assert top_level_packages() == sorted(MAY_IMPORT)


def test_the_allowed_directions_have_no_cycle() -> None:
    def reaches(start: str, goal: str, seen: frozenset[str] = frozenset()) -> bool:
        return any(
            step == goal or (step not in seen and reaches(step, goal, seen | {step}))
            for step in MAY_IMPORT[start]
        )

    assert [p for p in MAY_IMPORT if reaches(p, p)] == []


@pytest.mark.parametrize("package", sorted(MAY_IMPORT))
def test_imports_point_one_way(package: str) -> None:
    found = [v for module, path in module_files(package) for v in violations(module, path)]
    assert found == []


def test_imports_are_found_wherever_they_are() -> None:
    source = """
import db.models, mcp_client
from . import sibling
from ..types import ChatRequest
if TYPE_CHECKING:
    from chat_service.turn import TurnRunner

def build():
    from adapters.openai import OpenAIAdapter
    class Inner:
        def method(self):
            import governance.facade as facade
"""
    modules = {i.module for i in imports_in(source, "llm_service.sub.registry")}

    assert modules == {
        "db.models",
        "mcp_client",
        "llm_service.sub",
        "llm_service.types",
        "chat_service.turn",
        "adapters.openai",
        "governance.facade",
    }


def test_a_backward_import_is_reported(tmp_path: Path) -> None:
    module = tmp_path / "router.py"
    module.write_text("def pick():\n    from gateway.services import Services\n")

    assert list(violations("llm_service.router", module)) != []
    assert list(violations("gateway.router", module)) == []


def test_the_map_in_the_docs_names_every_package() -> None:
    # docs/architecture.md draws these packages and states this table; a package added or
    # renamed here must appear there too.
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert [p for p in MAY_IMPORT if f"{p}/" not in text] == []
