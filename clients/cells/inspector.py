"""The MCP Inspector's CLI (``@modelcontextprotocol/inspector --cli``) against ``/mcp``."""

from __future__ import annotations

import json
from typing import Any

from clients.cells.mcp_clients import reviewer
from clients.matrix import Cell, Context, expect, json_lines

KEY = "mcp-inspector"


def _inspector(context: Context, *options: str) -> dict[str, Any]:
    stack = context.stack
    command = [
        str(context.installed.bin("mcp-inspector")),
        "--cli",
        stack.mcp_url,
        "--transport",
        "http",
        "--header",
        f"Authorization: Bearer {stack.key(KEY)}",
        *options,
    ]
    output = context.run(command)
    try:
        answer: dict[str, Any] = json.loads(output[output.index("{") : output.rindex("}") + 1])
    except ValueError:
        seen = json_lines(output)
        expect(bool(seen), output[-2000:])
        answer = seen[-1]
    return answer


def listed(context: Context) -> None:
    tools = {tool["name"] for tool in _inspector(context, "--method", "tools/list")["tools"]}
    expect({"lookup", "transfer"} <= tools, str(tools))


def called(context: Context) -> None:
    answer = _inspector(
        context, "--method", "tools/call", "--tool-name", "lookup", "--tool-arg", "word=inspector"
    )
    texts = [block.get("text") for block in answer.get("content", [])]
    expect(texts == ["inspector: a thing"], str(answer)[:2000])


def approved_waiting(context: Context) -> None:
    """A call that needs a reviewer: the inspector's request waits until one approves it."""
    with reviewer(context):
        answer = _inspector(
            context, "--method", "tools/call", "--tool-name", "transfer", "--tool-arg", "amount=31"
        )
    texts = [block.get("text") for block in answer.get("content", [])]
    expect(texts == ["transferred 31"], str(answer)[:2000])


CELLS = [
    Cell("MCP Inspector CLI", "tools/list", "/mcp", listed),
    Cell("MCP Inspector CLI", "tools/call", "/mcp", called),
    Cell("MCP Inspector CLI", "call needing approval, waiting", "/mcp", approved_waiting),
]
