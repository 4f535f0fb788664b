"""The one catalog of standardized tools across all servers and in-process tools."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import structlog

from mcp_client.backend import BackendFactory, ToolCall
from mcp_client.config import CatalogSettings, MCPServerConfig
from mcp_client.grant_store import GrantStore
from mcp_client.hooks import NO_HOOKS, CallHooks
from mcp_client.index import Precedence, ServedTools, build_index, offered_to
from mcp_client.local_tools import LocalTool, LocalToolBackend
from mcp_client.oauth import Consent
from mcp_client.results import error_result, truncate
from mcp_client.supervisor import ServerPolicy, ServerStatus, ServerSupervisor
from mcp_client.transports import backend_factory
from mcp_client.types import (
    DEFINITION_CHANGED,
    CatalogPart,
    StandardizedTool,
    ToolCatalog,
    ToolResult,
)
from mcp_client.validation import ArgumentCheck

log = structlog.get_logger("mcp_client.catalog")


def policy_of(config: MCPServerConfig) -> ServerPolicy:
    return ServerPolicy(
        roles=frozenset(config.roles),
        tools=dict(config.tools),
        requires_approval=config.requires_approval,
        max_concurrency=config.max_concurrency,
        call_timeout=config.call_timeout,
        ping_interval=config.ping_interval,
    )


class MCPToolCatalog(ToolCatalog):
    """Implements ``ToolCatalog``. Build it, add servers and local tools, ``start``, ``aclose``."""

    def __init__(self, settings: CatalogSettings | None = None) -> None:
        self.settings = settings or CatalogSettings()
        self._servers: dict[str, ServerSupervisor] = {}
        self._precedence: dict[str, Precedence] = {}
        self._added = 0  # servers added without a precedence rank by the order they came in
        self._index: dict[str, tuple[StandardizedTool, ServerSupervisor]] = {}
        self._checks: dict[str, ArgumentCheck] = {}  # by definition hash: built once, not per call
        self._running: set[str] = set()
        self._change = asyncio.Event()  # replaced after every change; waiters hold the old one
        self._parts: dict[str, CatalogPart] = {}
        self._generations = itertools.count(1)

    @classmethod
    def from_config(
        cls,
        servers: Sequence[MCPServerConfig],
        settings: CatalogSettings,
        environ: Mapping[str, str],
        *,
        tokens: Callable[[str], GrantStore] | None = None,
        consent: Consent | None = None,
    ) -> MCPToolCatalog:
        """``environ`` supplies the values each server's config names (``headers_env``, OAuth
        secrets). ``tokens(server)`` keeps a server's OAuth tokens (default: in memory) and
        ``consent`` approves authorization-code requests (default: none; docs/mcp.md)."""
        catalog = cls(settings)
        for server in servers:
            factory = backend_factory(
                server,
                environ,
                tokens=tokens(server.name) if tokens else None,
                consent=consent,
            )
            catalog.add_server(server.name, server.transport, policy_of(server), factory)
        return catalog

    def add_server(
        self,
        name: str,
        transport: str,
        policy: ServerPolicy,
        factory: BackendFactory,
        precedence: Precedence | None = None,
    ) -> None:
        """``precedence`` decides which server's tool keeps a name two servers offer (the lowest
        does); by default servers rank in the order they are added, before any given one."""
        if name in self._servers:
            raise ValueError(f"a tool server named `{name}` already exists")
        self._added += 1
        self._precedence[name] = precedence or (0, float(self._added), name)
        self._servers[name] = ServerSupervisor(
            name,
            transport=transport,
            policy=policy,
            factory=factory,
            settings=self.settings,
            on_tools=self._rebuild,
        )

    async def remove_server(self, name: str) -> None:
        """Stops a server and drops its tools from the catalog; an unknown name is a no-op."""
        server = self._servers.pop(name, None)
        if server is None:
            return
        self._running.discard(name)
        self._precedence.pop(name, None)
        self._rebuild()  # its tools leave the catalog before the (possibly slow) shutdown
        await server.aclose()

    def reconnect(self, name: str) -> None:
        """Connect a degraded server now rather than at its next retry (e.g. it was just
        authorized); an unknown name is a no-op."""
        server = self._servers.get(name)
        if server is not None:
            server.wake()

    def register_local_tools(
        self,
        name: str,
        tools: Sequence[LocalTool],
        roles: Iterable[str],
        policy: ServerPolicy | None = None,
    ) -> None:
        """In-process tools under server name ``name``, filtered and called like remote ones."""
        policy = policy or ServerPolicy(roles=frozenset(roles))
        backend = LocalToolBackend(tools)
        self.add_server(name, "local", policy, lambda _on_change: backend)

    async def start(self) -> None:
        """Discover every server not yet started, concurrently, each within the discovery timeout.

        Servers and local tools added later are brought up by calling ``start`` again.
        """
        pending = [s for name, s in self._servers.items() if name not in self._running]
        self._running.update(server.name for server in pending)
        await asyncio.gather(*(server.connect_once() for server in pending))
        for server in pending:
            server.start_background()

    async def aclose(self) -> None:
        await asyncio.gather(*(server.aclose() for server in self._servers.values()))

    def status(self) -> dict[str, ServerStatus]:
        return {name: server.status for name, server in self._servers.items()}

    def bundle_names(self) -> list[str]:
        return [bundle.name for bundle in self.settings.bundles]

    def offered_to(self, roles: Iterable[str], bundle: str | None = None) -> list[StandardizedTool]:
        """The tools these roles may use; a ``bundle`` that does not exist selects nothing."""
        tools = [tool for tool, _ in self._index.values()]
        return offered_to(tools, roles, self.settings.bundles, bundle)

    def get(self, name: str) -> StandardizedTool | None:
        entry = self._index.get(name)
        return entry[0] if entry else None

    def all_tools(self) -> list[StandardizedTool]:
        return [tool for tool, _ in self._index.values()]

    def parts(self) -> dict[str, CatalogPart]:
        """Each server's tools; a part keeps its generation while its tools stay the same."""
        return self._parts

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        timeout: float | None = None,
        *,
        hooks: CallHooks = NO_HOOKS,
    ) -> ToolResult:
        """Looks the tool up, checks the arguments and runs the call (the catalog on its own,
        without a gateway's decision in front of it); ``hooks`` hear its progress and the
        server's requests for input (declined without an ``on_input``)."""
        tool = self.get(name)
        if tool is None:
            return error_result(f"unknown tool `{name}`")
        problems = self._check(tool).problems(arguments)
        if problems:
            return error_result(f"invalid arguments for `{name}`: " + "; ".join(problems))
        return await self.run(tool, arguments, timeout, hooks=hooks)

    async def run(
        self,
        tool: StandardizedTool,
        arguments: dict[str, Any],
        timeout: float | None = None,
        *,
        hooks: CallHooks = NO_HOOKS,
    ) -> ToolResult:
        """Runs a call decided on this definition of ``tool``, its arguments already checked
        against it. Refused (``definition_changed``, nothing sent to the server) when the
        tool's server now lists another definition under its name, or none."""
        entry = self._index.get(tool.name)
        if entry is None or entry[0].definition_hash != tool.definition_hash:
            return ToolResult(
                f"the tool `{tool.name}` changed on its server since the call was decided; "
                "it was not run",
                is_error=True,
                refused=DEFINITION_CHANGED,
            )
        listed, server = entry
        # The caller's limit and the operator's (the server's, else the catalog's): the tighter.
        configured = server.policy.call_timeout or self.settings.call_timeout
        limit = min(timeout, configured) if timeout else configured
        call = ToolCall(
            name=listed.original_name,
            arguments=arguments,
            deadline=asyncio.get_running_loop().time() + limit,
            limit=limit,
            execution=listed.execution,
            hooks=hooks,
        )
        try:
            result = await server.call(call)
        except Exception as exc:  # a failing tool must never end the chat that called it
            log.exception("tool_call_failed", tool=tool.name, server=listed.server)
            result = error_result(f"the tool failed: {type(exc).__name__}")
        return truncate(result, self.settings.max_result_chars)

    def _check(self, tool: StandardizedTool) -> ArgumentCheck:
        check = self._checks.get(tool.definition_hash)
        if check is None:
            check = self._checks[tool.definition_hash] = ArgumentCheck(tool.parameters)
        return check

    async def wait_for(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Wait until ``predicate()`` holds after some catalog change; False on timeout."""
        try:
            async with asyncio.timeout(timeout):
                while not predicate():
                    await self._change.wait()
        except TimeoutError:
            return False
        return True

    def _regroup(self, tools: Iterable[StandardizedTool]) -> dict[str, CatalogPart]:
        # Every rebuild makes new tool objects for every server: compare by value so that one
        # server's change leaves the others' parts (and what readers cached of them) alone.
        grouped: dict[str, list[StandardizedTool]] = {}
        for tool in tools:
            grouped.setdefault(tool.server, []).append(tool)
        parts: dict[str, CatalogPart] = {}
        for server, listed in grouped.items():
            part = self._parts.get(server)
            if part is None or part.tools != tuple(listed):
                part = CatalogPart(next(self._generations), tuple(listed))
            parts[server] = part
        return parts

    def _rebuild(self) -> None:
        served = [
            ServedTools(s.name, s.policy, s.tools, self._precedence[s.name])
            for s in self._servers.values()
        ]
        tools = build_index(served, self.settings.always_namespace)
        self._index = {name: (tool, self._servers[tool.server]) for name, tool in tools.items()}
        live = {tool.definition_hash for tool in tools.values()}
        self._checks = {key: check for key, check in self._checks.items() if key in live}
        self._parts = self._regroup(tools.values())
        change, self._change = self._change, asyncio.Event()
        change.set()
