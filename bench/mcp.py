"""TODO(MCP tool round trip): not measured yet.

The issue asks for a tool round trip through MCP (stdio and streamable HTTP) against calling
the server directly. It needs the gateway's MCP client (``mcp_client``), which is being built in
another branch. When it lands, implement ``measure`` here: start ``mcp-server-time`` over stdio
and over streamable HTTP, call ``get_current_time`` N times directly with the ``mcp`` SDK's
``ClientSession`` and N times through ``mcp_client``, and return p50/p99 of each; ``run.py``
calls it when ``--mcp`` is given.
"""

from __future__ import annotations


def measure(calls: int) -> dict[str, float]:
    raise NotImplementedError("the MCP round trip needs mcp_client's tool-calling API (TODO)")
