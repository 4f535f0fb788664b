"""Servers run as a child process speaking MCP over stdin/stdout."""

from __future__ import annotations

import sys
from pathlib import Path

from mcp import StdioServerParameters, stdio_client

from mcp_client.config import MCPServerConfig
from mcp_client.session_link import StreamsOpener


def resolve_command(command: str) -> str:
    """A bare name installed beside this interpreter (a console script of ours) runs from there.

    So ``command: mcp-server-time`` works from a virtual environment that is not on PATH; any other
    bare name is left to the usual PATH lookup.
    """
    if "/" in command or "\\" in command:
        return command
    beside = Path(sys.executable).parent / command
    return str(beside) if beside.is_file() else command


def opener(config: MCPServerConfig) -> StreamsOpener:
    assert config.command is not None  # the config validator requires it for stdio
    parameters = StdioServerParameters(
        command=resolve_command(config.command),
        args=config.args,
        env=config.env or None,
        cwd=config.cwd,
    )
    return lambda _watch: stdio_client(parameters)
