"""The SDK's MCPServer over streamable HTTP, in a process of its own, noting each execution in a
file so a test can count them across restarts.

    python counting_mcp_server.py PORT EXECUTIONS_FILE
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer


def main() -> None:
    port, executions = int(sys.argv[1]), Path(sys.argv[2])
    server = MCPServer("counting")

    @server.tool(description="Note one execution of `label` and say so.")
    def record(label: str) -> str:
        with executions.open("a", encoding="utf-8") as file:
            file.write(label + "\n")
        return f"recorded {label}"

    @server.tool(description="Echo the text back.")
    def echo(text: str) -> str:
        return text

    server.run("streamable-http", host="127.0.0.1", port=port)


if __name__ == "__main__":
    main()
