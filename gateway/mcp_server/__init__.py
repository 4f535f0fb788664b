"""The gateway as an MCP server: the company's tools at ``/mcp``, under the gateway's governance.

``endpoint`` authenticates and serves the Streamable HTTP transport (stateless), ``handlers``
answers ``tools/list`` and ``tools/call``, ``listing`` shapes the catalog as MCP tools,
``calls`` runs one call through the tool loop's policy, approval and execution, ``waiting``
holds a call while a human decides, and ``tasks`` offers held calls as MCP tasks.
"""
