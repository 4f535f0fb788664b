"""The Servers page's form: what an admin types, and the server config it becomes.

The form holds the fields a person sets by hand (transport, command line or URL, roles,
approval). Changing a server keeps everything else it has (per-tool overrides, limits), so a
server added through the API with more settings is not flattened by an edit here.
"""

from __future__ import annotations

import shlex
from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from admin.api.keys import validate_roles
from llm_service.errors import InvalidRequest
from mcp_client.config import AuthorizationCodeAuth, MCPServerConfig, Transport

TRANSPORTS: tuple[str, ...] = get_args(Transport)


class ServerForm(BaseModel):
    """The form's fields as posted (the CSRF token is checked apart)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    name: str = Field("", max_length=48)
    transport: Transport = "stdio"
    command_line: str = Field("", max_length=2000)
    url: str = Field("", max_length=2000)
    roles: str = Field("", max_length=1000)
    requires_approval: bool = False
    # HTTP servers: an admin's consent (authorization code, a public client) and its scopes.
    oauth: bool = False
    scopes: str = Field("", max_length=1000)

    @classmethod
    def of(cls, config: MCPServerConfig) -> ServerForm:
        command = [config.command, *config.args] if config.command else []
        return cls(
            name=config.name,
            transport=config.transport,
            command_line=shlex.join(command),
            url=config.url or "",
            roles=", ".join(config.roles),
            requires_approval=config.requires_approval,
            oauth=isinstance(config.auth, AuthorizationCodeAuth),
            scopes=" ".join(config.auth.scopes) if config.auth is not None else "",
        )

    def to_config(self, base: MCPServerConfig | None = None) -> MCPServerConfig:
        """The server this form describes, on top of ``base`` (the stored one, when changing)."""
        fields: dict[str, Any] = {
            **(base.model_dump() if base is not None else {}),
            "name": self.name.strip(),
            "transport": self.transport,
            "roles": validate_roles(self.roles.replace(",", " ").split()),
            "requires_approval": self.requires_approval,
            "command": None,
            "args": [],
            "url": None,
        }
        if self.transport == "stdio":
            words = _split(self.command_line)
            if words:
                fields["command"], fields["args"] = words[0], words[1:]
        else:
            fields["url"] = self.url.strip() or None
        fields["auth"] = self._auth(base)
        try:
            return MCPServerConfig.model_validate(fields)
        except ValidationError as exc:
            raise InvalidRequest(_problem(exc), param="server") from None

    def _auth(self, base: MCPServerConfig | None) -> dict[str, Any] | None:
        """The ``auth`` the form selects; what the form does not show (a pre-registered client,
        a metadata document URL) is kept from ``base``."""
        if not self.oauth:
            return None
        kept = base.auth if base is not None else None
        auth: dict[str, Any] = kept.model_dump() if isinstance(kept, AuthorizationCodeAuth) else {}
        return {**auth, "type": "authorization_code", "scopes": self.scopes.split()}


def _split(command_line: str) -> list[str]:
    try:
        return shlex.split(command_line)
    except ValueError as exc:  # e.g. an unclosed quote
        raise InvalidRequest(f"The command line cannot be read: {exc}.", param="command") from None


def _problem(exc: ValidationError) -> str:
    first = exc.errors()[0]
    message = str(first["msg"]).removeprefix("Value error, ")
    where = ".".join(str(part) for part in first["loc"])
    return f"`{where}`: {message}" if where else f"{message[:1].upper()}{message[1:]}."
