"""The standardized tool (seed 003): the one form tools leave the MCP client in.

mcp_client knows nothing of LLM providers; each adapter converts ``parameters`` for its own API.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from mcp_client.hooks import NO_HOOKS, CallHooks


@dataclass(frozen=True, slots=True)
class StandardizedTool:
    name: str  # unique in the catalog; `server__tool` where two servers collide
    description: str
    parameters: dict[str, Any]  # the JSON Schema exactly as the server gave it
    server: str  # origin server name; in-process tools use their registry's name
    original_name: str  # the tool's name on its server
    definition_hash: str
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] = field(default_factory=dict)
    roles: frozenset[str] = frozenset()  # empty: no role may use it
    requires_approval: bool = False
    auto_approved: bool = False
    category: str | None = None
    enabled: bool = True  # False: an admin disabled it; offered to no model, calls denied
    # MCP `execution` as the server gave it, e.g. {"taskSupport": "required"}: how it is called.
    execution: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ToolImage:
    """An image a tool returned (MCP image content, or an embedded image resource)."""

    mime_type: str
    data: str  # base64, as MCP carries it

    @property
    def data_url(self) -> str:
        return f"data:{self.mime_type};base64,{self.data}"


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool call produced, as text a model can read, and the images it returned (the
    text describes each one too, for channels that carry only text). Errors are results, not
    exceptions."""

    content: str
    is_error: bool = False
    structured: dict[str, Any] | None = None
    truncated: bool = False
    timed_out: bool = False  # the call hit its time limit (and was cancelled where possible)
    # The connection died while the call was out: the server may have run it or not.
    outcome_unknown: bool = False
    refused: str | None = None  # why the client did not send the call (``DEFINITION_CHANGED``)
    images: tuple[ToolImage, ...] = ()


# A call decided on a definition its server no longer lists is refused, not run as changed.
DEFINITION_CHANGED = "definition_changed"


def definition_hash(
    name: str,
    description: str,
    parameters: dict[str, Any],
    output_schema: dict[str, Any] | None = None,
) -> str:
    """A stable hash of what the model is told about a tool, to detect changed definitions."""
    canonical = json.dumps(
        {"name": name, "description": description, "input": parameters, "output": output_schema},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class CatalogPart:
    """One server's tools as the catalog lists them. ``generation`` changes exactly when they do
    (a new, dropped, renamed or redefined tool), so a reader may cache what it derives from them."""

    generation: int
    tools: tuple[StandardizedTool, ...]


class ServerHealth(Protocol):
    def as_dict(self) -> dict[str, Any]: ...


class ToolCatalog(Protocol):
    """What the gateway, the chat service and the executor need from the MCP client."""

    async def start(self) -> None:
        """Discover the tools; a failing server degrades, it never fails the start."""
        ...

    async def aclose(self) -> None: ...

    def status(self) -> Mapping[str, ServerHealth]:
        """Each tool server's health, for /readyz."""
        ...

    def bundle_names(self) -> list[str]: ...

    def get(self, name: str) -> StandardizedTool | None:
        """A tool by its catalog name, whatever the roles; None when it does not exist."""
        ...

    def all_tools(self) -> list[StandardizedTool]:
        """Every tool in the catalog, whatever the roles (for administrators)."""
        ...

    async def run(
        self,
        tool: StandardizedTool,
        arguments: dict[str, Any],
        timeout: float | None = None,
        *,
        hooks: CallHooks = NO_HOOKS,
    ) -> ToolResult:
        """Run a call decided on this definition of ``tool`` (its arguments checked against
        it): refused with ``refused=DEFINITION_CHANGED`` when the server now lists another.
        Never raises for tool failures: returns an error result. ``hooks`` hear its progress and
        the server's requests for input (a catalog that has neither may ignore them: requests
        for input are then declined)."""
        ...


@runtime_checkable
class PartedCatalog(Protocol):
    """A catalog that says which servers' tools changed (``ToolCatalog`` does not require it)."""

    def parts(self) -> Mapping[str, CatalogPart]:
        """Each server's tools by server name, in catalog order."""
        ...
