"""Servers reached over MCP's older HTTP+SSE transport."""

from __future__ import annotations

from collections.abc import Mapping

from mcp.client.sse import sse_client

from mcp_client.config import MCPServerConfig
from mcp_client.session_link import StreamsOpener
from mcp_client.transports.headers import resolve_headers


def opener(config: MCPServerConfig, environ: Mapping[str, str]) -> StreamsOpener:
    assert config.url is not None  # the config validator requires it
    url = config.url
    # A refused GET raises httpx2.HTTPStatusError, which failures.py reads by status.
    return lambda _watch: sse_client(url, headers=resolve_headers(config, environ))
