"""The MCP client: one catalog of standardized tools across tool servers, filtered by role."""

from mcp_client.catalog import MCPToolCatalog
from mcp_client.config import BundleConfig, CatalogSettings, MCPServerConfig, ToolOverride
from mcp_client.local_tools import LocalTool
from mcp_client.supervisor import ServerPolicy, ServerStatus
from mcp_client.types import StandardizedTool, ToolCatalog, ToolResult, definition_hash

__all__ = [
    "BundleConfig",
    "CatalogSettings",
    "LocalTool",
    "MCPServerConfig",
    "MCPToolCatalog",
    "ServerPolicy",
    "ServerStatus",
    "StandardizedTool",
    "ToolCatalog",
    "ToolOverride",
    "ToolResult",
    "definition_hash",
]
