"""Servers reached over MCP's streamable HTTP transport."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

import httpx2
from mcp.client.streamable_http import streamable_http_client

from mcp_client.config import MCPServerConfig
from mcp_client.http_watch import HTTPWatch
from mcp_client.session_link import StreamsOpener
from mcp_client.transports.headers import resolve_headers

# Reads stay open for long-running tools; each call has its own timeout on top.
_TIMEOUT = httpx2.Timeout(30.0, read=300.0)


def opener(config: MCPServerConfig, environ: Mapping[str, str]) -> StreamsOpener:
    assert config.url is not None  # the config validator requires it

    @asynccontextmanager
    async def open_streams(watch: HTTPWatch) -> AsyncIterator[object]:
        headers = resolve_headers(config, environ)
        async with (
            httpx2.AsyncClient(
                headers=headers, timeout=_TIMEOUT, event_hooks=watch.event_hooks()
            ) as client,
            streamable_http_client(str(config.url), http_client=client) as streams,
        ):
            yield streams

    return open_streams
