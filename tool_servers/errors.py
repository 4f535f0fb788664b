"""Errors of tool-server administration, one tree (reported by the HTTP edge by type).

GatewayError (llm_service.errors)
├── ServerConflict    a config file's server, or one of that name exists already
├── ServerNotFound    no runtime server of that name
├── ConnectFailed     the server's authorization server refused or failed the exchange
└── ConsentExpired    the sign-in that would connect the server took too long
"""

from __future__ import annotations

from llm_service.errors import GatewayError


class ServerConflict(GatewayError):
    pass


class ServerNotFound(GatewayError):
    pass


class ConnectFailed(GatewayError):
    pass


class ConsentExpired(GatewayError):
    pass
