"""Servers reached over MCP's streamable HTTP transport."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
from mcp.client.streamable_http import streamable_http_client

from mcp_client.http_watch import HTTPWatch
from mcp_client.session_link import StreamsOpener
from mcp_client.transports.access import HTTPAccess

# Reads stay open for long-running tools; each call has its own timeout on top.
_TIMEOUT = httpx2.Timeout(30.0, read=300.0)


def opener(access: HTTPAccess) -> StreamsOpener:
    url = access.config.url
    assert url is not None  # the config validator requires it

    @asynccontextmanager
    async def open_streams(watch: HTTPWatch) -> AsyncIterator[object]:
        async with (
            httpx2.AsyncClient(
                headers=access.headers(),
                auth=access.auth(),
                timeout=_TIMEOUT,
                event_hooks=watch.event_hooks(url),
            ) as client,
            streamable_http_client(url, http_client=client) as streams,
        ):
            yield streams

    return open_streams
