"""What an HTTP transport sends with each request: headers from named variables, and OAuth."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import httpx2

from mcp_client.config import MCPServerConfig
from mcp_client.grant_store import GrantStore
from mcp_client.oauth import Consent, http_auth
from mcp_client.transports.headers import resolve_headers


@dataclass(frozen=True)
class HTTPAccess:
    """One server's credentials. Resolved on every connect, so a variable set later is seen and a
    missing one degrades the server with its name (BackendUnavailable)."""

    config: MCPServerConfig
    environ: Mapping[str, str]
    tokens: GrantStore  # outlives connections: a reconnect reuses (or refreshes) the tokens
    consent: Consent | None = None

    def headers(self) -> dict[str, str]:
        return resolve_headers(self.config, self.environ)

    def auth(self) -> httpx2.Auth | None:
        return http_auth(self.config, self.environ, self.tokens, self.consent)
