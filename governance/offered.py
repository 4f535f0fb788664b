"""What each principal is offered: the visible tools per (roles, bundle), precomputed.

Working out what a principal may see means applying every tool's policy, pin and bundle rules;
with a thousand tools that is milliseconds, and it was done on every model call and every
``/v1/tools``. Here it is done once per server and kept until something it depends on changes:
the server's tools (its part's generation), or the policies, pins or trusted servers (``state``,
given by the caller). A change on one server rebuilds that server's share only.

Only what is *offered* is cached: whether a call may run is decided live (``verdict.judge``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar, cast

from llm_service.types import ToolSpec
from mcp_client.config import BundleConfig
from mcp_client.index import offered_to
from mcp_client.types import CatalogPart, StandardizedTool

T = TypeVar("T")
Tools = tuple[StandardizedTool, ...]
Principal = tuple[frozenset[str], str | None]  # (roles, bundle)

# Distinct (roles, bundle) pairs kept; past it the oldest goes (keys share few role sets).
MAX_PRINCIPALS = 512


@dataclass(slots=True)
class Offer:
    """The tools offered to one (roles, bundle) at one moment; a new ``Offer`` replaces it when
    anything behind it changes, so what is derived from it (``derived``) may be kept with it."""

    tools: Tools
    _derived: dict[Hashable, object] = field(default_factory=dict)

    def derived(self, key: Hashable, build: Callable[[Tools], T]) -> T:
        """``build(tools)``, made once per offer and ``key`` (e.g. a serialized response)."""
        if key not in self._derived:
            self._derived[key] = build(self.tools)
        return cast(T, self._derived[key])

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        """The tools as a model is offered them, built once per offer."""
        return self.derived(ToolSpec, _specs)


def _specs(tools: Tools) -> tuple[ToolSpec, ...]:
    return tuple(ToolSpec(tool.name, tool.description, tool.parameters) for tool in tools)


@dataclass(slots=True)
class _Kept:
    version: tuple[Hashable, ...]
    offer: Offer
    by_server: dict[str, tuple[Hashable, Tools]]


class OfferedTools:
    """``effective(tools)``: a server's tools as policy has them, less those held for review
    (whatever the roles); asked again for a server only when its part or the state changed."""

    def __init__(
        self,
        effective: Callable[[Sequence[StandardizedTool]], Tools],
        bundles: Sequence[BundleConfig],
    ) -> None:
        self._effective = effective
        self._bundles = bundles
        self._servers: dict[str, tuple[Hashable, Tools]] = {}
        self._kept: dict[Principal, _Kept] = {}

    def offer(
        self,
        roles: frozenset[str],
        bundle: str | None,
        parts: Mapping[str, CatalogPart],
        state: Hashable,
    ) -> Offer:
        version = (state, *((name, part.generation) for name, part in parts.items()))
        principal = (roles, bundle)
        kept = self._kept.get(principal)
        if kept is not None and kept.version == version:
            return kept.offer
        by_server: dict[str, tuple[Hashable, Tools]] = {}
        tools: list[StandardizedTool] = []
        for name, part in parts.items():
            server_version = (state, part.generation)
            share = kept.by_server.get(name) if kept is not None else None
            if share is None or share[0] != server_version:
                visible = offered_to(
                    self._server(name, server_version, part), roles, self._bundles, bundle
                )
                share = (server_version, tuple(visible))
            by_server[name] = share
            tools.extend(share[1])
        self._forget_servers(parts)
        offer = Offer(tuple(tools))
        self._kept.pop(principal, None)
        if len(self._kept) >= MAX_PRINCIPALS:
            del self._kept[next(iter(self._kept))]
        self._kept[principal] = _Kept(version, offer, by_server)
        return offer

    def _server(self, name: str, version: Hashable, part: CatalogPart) -> Tools:
        kept = self._servers.get(name)
        if kept is None or kept[0] != version:
            kept = self._servers[name] = (version, self._effective(part.tools))
        return kept[1]

    def _forget_servers(self, parts: Mapping[str, CatalogPart]) -> None:
        for name in [name for name in self._servers if name not in parts]:
            del self._servers[name]
