"""HTTP headers whose values come from named environment variables (secrets stay out of config)."""

from __future__ import annotations

from collections.abc import Mapping

from mcp_client.backend import BackendUnavailable
from mcp_client.config import MCPServerConfig


def resolve_headers(config: MCPServerConfig, environ: Mapping[str, str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for header, variable in config.headers_env.items():
        value = environ.get(variable)
        if not value:
            raise BackendUnavailable(
                f"environment variable {variable} (header {header}) is not set"
            )
        headers[header] = value
    return headers
