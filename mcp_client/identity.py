"""How the gateway names itself to tool servers (``clientInfo`` in ``initialize``)."""

from __future__ import annotations

from importlib import metadata

import mcp_types as types

DISTRIBUTION = "llm-gateway"


def client_info() -> types.Implementation:
    try:
        version = metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        version = "0+unknown"
    return types.Implementation(name=DISTRIBUTION, version=version)
