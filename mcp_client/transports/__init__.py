"""One module per transport; ``backend_factory`` picks the right one for a server's config."""

from __future__ import annotations

from collections.abc import Mapping

from mcp_client.backend import BackendFactory, OnToolsChanged, ToolBackend
from mcp_client.config import MCPServerConfig
from mcp_client.http_manifest import HTTPManifestBackend
from mcp_client.session_backend import MCPSessionBackend
from mcp_client.transports import sse, stdio, streamable_http


def backend_factory(config: MCPServerConfig, environ: Mapping[str, str]) -> BackendFactory:
    """``environ`` supplies the values of ``headers_env`` (and nothing else is read from it)."""

    def build(on_tools_changed: OnToolsChanged) -> ToolBackend:
        if config.transport == "http_manifest":
            return HTTPManifestBackend(config, environ)
        if config.transport == "stdio":
            opener = stdio.opener(config)
        elif config.transport == "sse":
            opener = sse.opener(config, environ)
        else:
            opener = streamable_http.opener(config, environ)
        return MCPSessionBackend(opener, on_tools_changed, server=config.name)

    return build
