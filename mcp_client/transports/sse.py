"""Servers reached over MCP's older HTTP+SSE transport."""

from __future__ import annotations

from mcp.client.sse import sse_client

from mcp_client.session_link import StreamsOpener
from mcp_client.transports.access import HTTPAccess


def opener(access: HTTPAccess) -> StreamsOpener:
    url = access.config.url
    assert url is not None  # the config validator requires it
    # A refused GET raises httpx2.HTTPStatusError, which failures.py reads by status.
    return lambda _watch: sse_client(url, headers=access.headers(), auth=access.auth())
