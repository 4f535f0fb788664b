"""Servers run as a child process speaking MCP over stdin/stdout."""

from __future__ import annotations

from mcp import StdioServerParameters, stdio_client

from mcp_client.config import MCPServerConfig
from mcp_client.session_backend import StreamsOpener


def opener(config: MCPServerConfig) -> StreamsOpener:
    assert config.command is not None  # the config validator requires it for stdio
    parameters = StdioServerParameters(
        command=config.command, args=config.args, env=config.env or None, cwd=config.cwd
    )
    return lambda: stdio_client(parameters)
