"""One module per transport; ``backend_factory`` picks the right one for a server's config."""

from __future__ import annotations

from collections.abc import Mapping

from mcp_client.backend import BackendFactory, OnToolsChanged, ToolBackend
from mcp_client.config import MCPServerConfig
from mcp_client.grant_store import GrantStore, MemoryGrantStore
from mcp_client.http_manifest import HTTPManifestBackend
from mcp_client.oauth import Consent
from mcp_client.session_backend import MCPSessionBackend
from mcp_client.transports import sse, stdio, streamable_http
from mcp_client.transports.access import HTTPAccess


def backend_factory(
    config: MCPServerConfig,
    environ: Mapping[str, str],
    *,
    tokens: GrantStore | None = None,
    consent: Consent | None = None,
) -> BackendFactory:
    """``environ`` supplies the values the config names (``headers_env``, the OAuth secrets) and
    nothing else is read from it. ``tokens`` keeps the server's OAuth tokens (default: in this
    process); ``consent`` approves an authorization-code request (default: none, so such a
    server stays degraded until one is given)."""
    access = HTTPAccess(config, environ, tokens or MemoryGrantStore(), consent)

    def build(on_tools_changed: OnToolsChanged) -> ToolBackend:
        if config.transport == "http_manifest":
            return HTTPManifestBackend(config, environ)
        if config.transport == "stdio":
            opener = stdio.opener(config)
        elif config.transport == "sse":
            opener = sse.opener(access)
        else:
            opener = streamable_http.opener(access)
        return MCPSessionBackend(opener, on_tools_changed, server=config.name)

    return build
