"""An SDK stdio server whose `crash` tool kills the process mid-call (run as a subprocess)."""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer


def main() -> None:
    server = MCPServer("crashy")

    @server.tool(description="The process id serving this call.")
    def pid() -> str:
        return str(os.getpid())

    @server.tool(description="Kills the server process without answering.")
    def crash() -> str:
        os._exit(3)

    server.run("stdio")


if __name__ == "__main__":
    main()
