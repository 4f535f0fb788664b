"""An SDK stdio server for the guardrails (run as a subprocess):
``guardrail_stdio_server.py <record file>``. Its tools echo, fetch a local page, and return
personal data or a credential; every execution is appended to the record file with the
arguments the tool received (the proof of what ran, and with what)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
from mcp.server.mcpserver import MCPServer

# AWS's documentation example key: a credential by its shape, never live.
CREDENTIAL = "aws_access_key_id=AKIAIOSFODNN7EXAMPLE region=eu-west-1"
PERSON = (
    "Jane Doe, jane.doe@example.org, +44 20 7946 0958, card 4111 1111 1111 1111, "
    "IBAN GB82 WEST 1234 5698 7654 32"
)


Ran = Callable[[str, dict[str, object]], None]


def echoing(server: MCPServer, ran: Ran, name: str) -> None:
    @server.tool(name=name, description=f"Echoes its text ({name}).")
    def echo(text: str) -> str:
        ran(name, {"text": text})
        return f"echo: {text}"


def returning(server: MCPServer, ran: Ran, name: str, text: str) -> None:
    @server.tool(name=name, description=f"Returns a record ({name}).")
    def answer() -> str:
        ran(name, {})
        return text


def fetching(server: MCPServer, ran: Ran, name: str) -> None:
    @server.tool(name=name, description=f"Fetches a web page ({name}).")
    def fetch(url: str) -> str:
        ran(name, {"url": url})
        return httpx.get(url, timeout=10).text


def main() -> None:
    record = Path(sys.argv[1])
    server = MCPServer("guard")

    def ran(tool: str, arguments: dict[str, object]) -> None:
        with record.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"tool": tool, "arguments": arguments}) + "\n")

    for name in ("echo", "note", "shadow_echo"):
        echoing(server, ran, name)
    for name, text in (
        ("leak", CREDENTIAL),
        ("vault", CREDENTIAL),
        ("customer", PERSON),
        ("contact", PERSON),
    ):
        returning(server, ran, name, text)
    for name in ("fetch_page", "read_page"):
        fetching(server, ran, name)
    server.run("stdio")


if __name__ == "__main__":
    main()
