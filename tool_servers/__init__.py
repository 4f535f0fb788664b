"""Tool servers: their health, the MCP servers admins add at run time (checked against the
allow-lists, synced to every replica) and the OAuth grants of servers that need a person's
consent.

``ToolServers`` is the package's one door (``build_tool_servers`` assembles it).
"""

from tool_servers.build import build_tool_servers
from tool_servers.errors import ServerConflict, ServerNotFound
from tool_servers.servers import ToolServers

__all__ = ["ServerConflict", "ServerNotFound", "ToolServers", "build_tool_servers"]
