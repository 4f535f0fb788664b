"""An SDK stdio server whose every tool execution is appended to a file (run as a subprocess):
``recording_stdio_server.py <record file> [fresh]``. The file is the proof of what ran.

``fresh`` serves one tool, `fresh_tool`, for an untrusted server whose tools await review.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations


def main() -> None:
    record = Path(sys.argv[1])
    server = MCPServer("recording")

    def ran(tool: str, arguments: dict[str, object]) -> str:
        with record.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"tool": tool, "arguments": arguments}) + "\n")
        return f"{tool} ran"

    if sys.argv[2:] == ["fresh"]:

        @server.tool(description="A tool from a server nobody has reviewed.")
        def fresh_tool() -> str:
            return ran("fresh_tool", {})

        server.run("stdio")
        return

    @server.tool(description="Writes a note.")
    def write_note(text: str) -> str:
        return ran("write_note", {"text": text})

    @server.tool(description="Counts.")
    def ping(n: int) -> str:
        return ran("ping", {"n": n})

    @server.tool(description="Schedules something on a day.")
    def schedule(day: datetime.date) -> str:
        return ran("schedule", {"day": day.isoformat()})

    @server.tool(description="Takes its time.")
    async def slow() -> str:
        await asyncio.sleep(4)
        return ran("slow", {})

    @server.tool(
        description="Deletes everything.",
        annotations=ToolAnnotations(destructiveHint=True, readOnlyHint=False),
    )
    def wipe() -> str:
        return ran("wipe", {})

    server.run("stdio")


if __name__ == "__main__":
    main()
