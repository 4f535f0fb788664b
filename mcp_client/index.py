"""Naming, role and bundle rules that turn servers' tools into the catalog's standardized tools."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mcp_client.backend import RemoteTool
from mcp_client.config import BundleConfig
from mcp_client.supervisor import ServerPolicy
from mcp_client.types import StandardizedTool, definition_hash

SEPARATOR = "__"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


# Which server's tool keeps a contested bare name: the lowest wins. Config servers come first in
# config order, then runtime servers by creation time; editing a server does not change it.
Precedence = tuple[int, float, str]


@dataclass(frozen=True, slots=True)
class ServedTools:
    server: str
    policy: ServerPolicy
    tools: Sequence[RemoteTool]
    precedence: Precedence = (0, 0.0, "")


def qualified_name(server: str, tool_name: str) -> str:
    return f"{server}{SEPARATOR}{_safe(tool_name)}"


def build_index(
    served: Iterable[ServedTools], always_namespace: bool
) -> dict[str, StandardizedTool]:
    """Catalog name -> tool. The first claimant of a name (by precedence) keeps it bare; a later
    server's tool of the same name is ``server__tool`` (every tool is, if asked), so a tool's name
    never changes because another server appeared."""
    index: dict[str, StandardizedTool] = {}
    for group in sorted(served, key=lambda group: group.precedence):
        for tool in group.tools:
            if not _enabled(group, tool):
                continue
            name = _safe(tool.name)
            if always_namespace or name in index:
                name = qualified_name(group.server, tool.name)
            if name in index:  # a qualified name a bare one already took: not offered twice
                continue
            index[name] = _standardize(name, group, tool)
    return index


def _enabled(group: ServedTools, tool: RemoteTool) -> bool:
    override = group.policy.tools.get(tool.name)
    return bool(tool.name) and (override is None or override.enabled)


def _safe(name: str) -> str:
    # Provider APIs accept only these characters in function names.
    return _UNSAFE.sub("_", name)[:64]


def _standardize(name: str, group: ServedTools, tool: RemoteTool) -> StandardizedTool:
    policy = group.policy
    override = policy.tools.get(tool.name)
    roles = policy.roles
    requires_approval = policy.requires_approval
    auto_approved = False
    if override is not None:
        roles = frozenset(override.roles) if override.roles is not None else roles
        if override.requires_approval is not None:
            requires_approval = override.requires_approval
        auto_approved = bool(override.auto_approved)
    return StandardizedTool(
        name=name,
        description=tool.description,
        parameters=tool.input_schema,
        server=group.server,
        original_name=tool.name,
        definition_hash=definition_hash(
            name, tool.description, tool.input_schema, tool.output_schema
        ),
        output_schema=tool.output_schema,
        annotations=tool.annotations,
        roles=roles,
        requires_approval=requires_approval,
        auto_approved=auto_approved,
        category=tool.category,
        execution=tool.execution,
    )


def in_bundle(tool: StandardizedTool, bundle: BundleConfig) -> bool:
    names = set(bundle.tools)
    return (
        tool.name in names
        or qualified_name(tool.server, tool.original_name) in names
        or f"{tool.server}{SEPARATOR}*" in names
        or (tool.category is not None and tool.category in bundle.categories)
    )


def offered_to(
    tools: Iterable[StandardizedTool],
    roles: Iterable[str],
    bundles: Sequence[BundleConfig],
    bundle: str | None,
) -> list[StandardizedTool]:
    """The tools these roles may use; a ``bundle`` that does not exist selects nothing."""
    held = frozenset(roles)
    chosen = [b for b in bundles if b.name == bundle] if bundle is not None else None
    visible = [tool for tool in tools if tool.enabled and visible_to(tool, held, bundles)]
    if chosen is not None:
        visible = [tool for tool in visible if any(in_bundle(tool, b) for b in chosen)]
    return visible


def visible_to(
    tool: StandardizedTool, roles: frozenset[str], bundles: Sequence[BundleConfig]
) -> bool:
    """A role sees a tool it is allowed; a role granted bundles sees only what they hold."""
    for role in roles & tool.roles:
        granted = [bundle for bundle in bundles if role in bundle.roles]
        if not granted or any(in_bundle(tool, bundle) for bundle in granted):
            return True
    return False
