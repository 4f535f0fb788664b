"""What an admin may add as a tool server at run time: the config file's allow-lists.

No API key may make the gateway run an arbitrary program (a stdio command line must be exactly on
``tool_catalog.stdio_allow_list``, with no extra environment or working directory), call an
arbitrary address (an HTTP server's URL must lie under a prefix of
``tool_catalog.http_allow_list``), or read the gateway's environment (``headers_env``). Servers
in the config file are not checked: the operator wrote them.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_service.errors import InvalidRequest
from mcp_client.config import (
    AuthorizationCodeAuth,
    CatalogSettings,
    ClientCredentialsAuth,
    IdentityAssertionAuth,
    MCPServerConfig,
)
from mcp_client.url_prefixes import BadURL, URLPrefix, allowed, parse


@dataclass(frozen=True, slots=True)
class RuntimeServerRules:
    stdio_allow_list: tuple[tuple[str, ...], ...] = ()
    http_prefixes: tuple[URLPrefix, ...] = ()

    @classmethod
    def from_settings(cls, settings: CatalogSettings) -> RuntimeServerRules:
        return cls(
            stdio_allow_list=tuple(tuple(line) for line in settings.stdio_allow_list),
            http_prefixes=tuple(parse(prefix) for prefix in settings.http_allow_list),
        )

    def check(self, config: MCPServerConfig) -> None:
        """Raises ``InvalidRequest`` naming the refused field."""
        if config.headers_env:
            raise InvalidRequest(
                "`headers_env` is for the config file only: it reads the gateway's environment.",
                param="headers_env",
            )
        _check_auth(config)
        if config.transport == "stdio":
            self._check_stdio(config)
        else:
            self._check_url(config.url or "")

    def _check_stdio(self, config: MCPServerConfig) -> None:
        for field in ("env", "cwd"):
            if getattr(config, field):
                raise InvalidRequest(
                    f"A stdio server added at run time takes no `{field}`.", param=field
                )
        if (config.command or "", *config.args) not in self.stdio_allow_list:
            raise InvalidRequest(
                "This command line (`command` and `args`) is not on "
                "`tool_catalog.stdio_allow_list`.",
                param="command",
            )

    def _check_url(self, url: str) -> None:
        try:
            permitted = allowed(url, self.http_prefixes)
        except BadURL as exc:
            raise InvalidRequest(f"`url`: {exc}.", param="url") from None
        if not permitted:
            message = (
                "`url` is under no prefix of `tool_catalog.http_allow_list`."
                if self.http_prefixes
                else "`url` is refused: `tool_catalog.http_allow_list` is empty, so no HTTP tool "
                "server can be added at run time."
            )
            raise InvalidRequest(message, param="url")


def _check_auth(config: MCPServerConfig) -> None:
    """OAuth secrets come from the environment, so a runtime server may only use the
    authorization-code flow with a public client (registered dynamically, by a metadata
    document, or pre-registered without a secret): its tokens come from an admin's consent."""
    auth = config.auth
    if isinstance(auth, ClientCredentialsAuth | IdentityAssertionAuth):
        raise InvalidRequest(
            f"`auth` of type {auth.type} is for the config file only: its secrets are read "
            "from the gateway's environment.",
            param="auth",
        )
    if isinstance(auth, AuthorizationCodeAuth) and auth.client_secret_env:
        raise InvalidRequest(
            "`auth.client_secret_env` is for the config file only: it reads the gateway's "
            "environment.",
            param="auth",
        )
