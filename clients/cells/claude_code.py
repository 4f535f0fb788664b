"""Claude Code (``@anthropic-ai/claude-code``), non-interactive (``-p``), through ``/v1/messages``
with ``ANTHROPIC_BASE_URL``, for a model id it does not know (a company alias)."""

from __future__ import annotations

import base64
import json
from typing import Any

from clients.matrix import Cell, Context, expect, json_lines
from tests.support.fake_openai import FakeReply, FakeToolCall

MODEL = "company-alias"
KEY = "claude-code"  # its API key's name, as usage and audit show it
MARKER = "matrix-marker-42"


def _claude(context: Context, prompt: str, *options: str, model: str = MODEL) -> str:
    stack = context.stack
    env = {
        "ANTHROPIC_BASE_URL": stack.url,
        "ANTHROPIC_API_KEY": stack.key(KEY),
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    command = [str(context.installed.bin("claude")), "-p", prompt, "--model", model, *options]
    return context.run(command, env)


def _tool_results(requests: list[dict[str, Any]]) -> str:
    """Every tool result the model was sent, as text."""
    return json.dumps(
        [m for request in requests for m in request["messages"] if m.get("role") == "tool"]
    )


def plain(context: Context) -> None:
    context.stack.openai.queue(FakeReply(text="The gateway answered."))
    output = _claude(context, "Say something", "--output-format", "json")
    results = [line.get("result") for line in json_lines(output)]
    expect(results == ["The gateway answered."], output[-2000:])


def anthropic_upstream(context: Context) -> None:
    """The alias served by an Anthropic model: thinking, effort and system messages reach it as
    Anthropic takes them."""
    context.stack.anthropic.queue(FakeReply(text="Claude answered."))
    output = _claude(context, "Say something", "--output-format", "json", model="claude-alias")
    results = [line.get("result") for line in json_lines(output)]
    expect(results == ["Claude answered."], output[-2000:])


def streamed(context: Context) -> None:
    context.stack.openai.queue(FakeReply(text="Streamed through the gateway."))
    output = _claude(context, "Say something", "--output-format", "stream-json", "--verbose")
    results = [event.get("result") for event in json_lines(output) if event["type"] == "result"]
    expect(results == ["Streamed through the gateway."], output[-2000:])


def own_tool(context: Context) -> None:
    """The scripted model calls Claude Code's own Bash tool; it runs here and sends the result."""
    openai = context.stack.openai
    command = {"command": f"echo {MARKER}", "description": "Print a marker"}
    openai.queue(FakeReply(tool_calls=[FakeToolCall("Bash", command, "call_bash")]))
    openai.queue(FakeReply(text="The command ran."))
    output = _claude(context, "Run the marker command", "--allowedTools", "Bash")
    expect("The command ran." in output, output[-2000:])
    expect(MARKER in _tool_results(openai.requests), "the Bash result never reached the model")


# A 1x1 PNG: what Claude Code's Read tool sends back as an image block.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


def image_result(context: Context) -> None:
    """The scripted model reads an image with Claude Code's Read tool: the tool result holds an
    image block, which reaches an OpenAI model as an image."""
    (context.work / "chart.png").write_bytes(PIXEL)
    openai = context.stack.openai
    read = {"file_path": str(context.work / "chart.png")}
    openai.queue(FakeReply(tool_calls=[FakeToolCall("Read", read, "call_read")]))
    openai.queue(FakeReply(text="A single pixel."))
    output = _claude(context, "Describe chart.png", "--allowedTools", "Read")
    expect("A single pixel." in output, output[-2000:])
    sent = json.dumps(openai.requests[-1]["messages"])
    expect("data:image/png;base64," in sent, "the image never reached the model")


def gateway_mcp_tool(context: Context) -> None:
    """The gateway's ``/mcp`` as Claude Code's MCP server; the model calls a tool through it."""
    stack = context.stack
    config = {
        "mcpServers": {
            "gateway": {
                "type": "http",
                "url": stack.mcp_url,
                "headers": {"Authorization": f"Bearer {stack.key(KEY)}"},
            }
        }
    }
    (context.work / "mcp.json").write_text(json.dumps(config))
    lookup = FakeToolCall("mcp__gateway__lookup", {"word": MARKER}, "call_mcp")
    stack.openai.queue(FakeReply(tool_calls=[lookup]), FakeReply(text="Looked it up."))
    output = _claude(
        context,
        "Look the marker up",
        "--mcp-config",
        "mcp.json",
        "--strict-mcp-config",
        "--allowedTools",
        "mcp__gateway__lookup",
    )
    expect("Looked it up." in output, output[-2000:])
    expect(f"{MARKER}: a thing" in _tool_results(stack.openai.requests), "no tool result upstream")


def count_tokens(context: Context) -> None:
    """What ``/context`` calls: ``POST /v1/messages/count_tokens`` (no model call)."""
    context.stack.openai.queue(FakeReply(text="ok"))
    _claude(context, "/context")
    counted = [
        e
        for e in context.stack.recorder.exchanges
        if e.path.startswith("/v1/messages/count_tokens")
    ]
    expect(bool(counted) and all(e.status == 200 for e in counted), "no count_tokens answered 200")


CELLS = [
    Cell("Claude Code", "plain answer (`--output-format json`)", "/v1/messages", plain),
    Cell("Claude Code", "streamed (`stream-json`)", "/v1/messages", streamed),
    Cell(
        "Claude Code",
        "plain answer, an Anthropic model behind the alias",
        "/v1/messages",
        anthropic_upstream,
    ),
    Cell("Claude Code", "its own Bash tool, result sent back", "/v1/messages", own_tool),
    Cell(
        "Claude Code", "its Read tool on an image: image tool result", "/v1/messages", image_result
    ),
    Cell(
        "Claude Code",
        "gateway `/mcp` as its MCP server, tool called",
        "/v1/messages + /mcp",
        gateway_mcp_tool,
    ),
    Cell("Claude Code", "`/context` (token counting)", "/v1/messages/count_tokens", count_tokens),
]
