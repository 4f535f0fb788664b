"""OpenAI's Codex CLI (``@openai/codex``), ``codex exec``, with the gateway as a custom model
provider on the Responses wire (``wire_api = "responses"``; this version has no chat wire)."""

from __future__ import annotations

import json
from typing import Any

from clients.matrix import Cell, Context, expect, json_lines
from tests.support.fake_openai import FakeReply, FakeToolCall

MODEL = "company-alias"
KEY = "codex"  # its API key's name, as usage and audit show it
MARKER = "matrix-marker-43"


def _config(context: Context, mcp: bool = False, model: str = MODEL) -> None:
    stack = context.stack
    lines = [
        f'model = "{model}"',
        'model_provider = "gateway"',
        "[model_providers.gateway]",
        'name = "llm-gateway"',
        f'base_url = "{stack.v1}"',
        'env_key = "GATEWAY_API_KEY"',
        'wire_api = "responses"',
    ]
    if mcp:
        lines += [
            "[mcp_servers.gateway]",
            f'url = "{stack.mcp_url}"',
            'bearer_token_env_var = "GATEWAY_API_KEY"',
        ]
    folder = context.work / ".codex"
    folder.mkdir(exist_ok=True)
    (folder / "config.toml").write_text("\n".join(lines) + "\n")


def _codex(
    context: Context, prompt: str, *options: str, mcp: bool = False, model: str = MODEL
) -> str:
    _config(context, mcp, model)
    env = {"CODEX_HOME": str(context.work / ".codex"), "GATEWAY_API_KEY": context.stack.key(KEY)}
    command = [
        str(context.installed.bin("codex")),
        "exec",
        "--skip-git-repo-check",
        *options,
        prompt,
    ]
    return context.run(command, env)


def _tool_results(requests: list[dict[str, Any]]) -> str:
    return json.dumps(
        [m for request in requests for m in request["messages"] if m.get("role") == "tool"]
    )


def plain(context: Context) -> None:
    context.stack.openai.queue(FakeReply(text="The gateway answered."))
    output = _codex(context, "Say something")
    expect("The gateway answered." in output, output[-2000:])


def passed_through(context: Context) -> None:
    """An OpenAI model whose own Responses API the gateway passes the request on to."""
    context.stack.openai.queue(FakeReply(text="OpenAI answered."))
    output = _codex(context, "Say something", model="gpt-native")
    expect("OpenAI answered." in output, output[-2000:])
    sent = context.stack.openai.requests[0]
    expect(sent["store"] is False, "the gateway keeps the history: store false upstream")
    kinds = {tool.get("type") for tool in sent.get("tools", [])}
    expect("web_search" not in kinds, f"a built-in tool went to OpenAI: {kinds}")


def streamed(context: Context) -> None:
    context.stack.openai.queue(FakeReply(text="Streamed through the gateway."))
    output = _codex(context, "Say something", "--json")
    events = json_lines(output)
    texts = [e["item"].get("text") for e in events if e.get("type") == "item.completed"]
    expect("Streamed through the gateway." in texts, output[-2000:])


def shell_tool(context: Context) -> None:
    openai = context.stack.openai
    openai.queue(
        FakeReply(tool_calls=[FakeToolCall("exec_command", {"cmd": f"echo {MARKER}"}, "call_sh")])
    )
    openai.queue(FakeReply(text="The command ran."))
    output = _codex(context, "Run the marker command")
    expect("The command ran." in output, output[-2000:])
    expect(MARKER in _tool_results(openai.requests), "the command's output never reached the model")


def parallel_calls(context: Context) -> None:
    """Two shell calls in one turn (``parallel_tool_calls``): both outputs go back together."""
    openai = context.stack.openai
    calls = [
        FakeToolCall("exec_command", {"cmd": f"echo {MARKER}-a"}, "call_a"),
        FakeToolCall("exec_command", {"cmd": f"echo {MARKER}-b"}, "call_b"),
    ]
    openai.queue(FakeReply(tool_calls=calls), FakeReply(text="Both ran."))
    output = _codex(context, "Run both marker commands")
    expect("Both ran." in output, output[-2000:])
    results = _tool_results(openai.requests[-1:])
    expect(f"{MARKER}-a" in results and f"{MARKER}-b" in results, "an output is missing")


def gateway_mcp_tool(context: Context) -> None:
    """The gateway's ``/mcp`` as Codex's MCP server: Codex offers its tools in a namespace
    (``mcp__gateway`` + ``lookup``), the scripted model calls one, the gateway runs it."""
    stack = context.stack
    lookup = FakeToolCall("mcp__gateway__lookup", {"word": MARKER}, "call_mcp")
    stack.openai.queue(FakeReply(tool_calls=[lookup]), FakeReply(text="Looked it up."))
    output = _codex(context, "Look the marker up", mcp=True)
    expect("Looked it up." in output, output[-2000:])
    expect(f"{MARKER}: a thing" in _tool_results(stack.openai.requests), "no tool result upstream")


CELLS = [
    Cell("Codex CLI", "plain answer", "/v1/responses", plain),
    Cell("Codex CLI", "streamed (`--json` events)", "/v1/responses", streamed),
    Cell(
        "Codex CLI",
        "plain answer, OpenAI's Responses API passed through",
        "/v1/responses",
        passed_through,
    ),
    Cell(
        "Codex CLI",
        "its shell tool (`exec_command`), output sent back",
        "/v1/responses",
        shell_tool,
    ),
    Cell("Codex CLI", "two shell calls in one turn", "/v1/responses", parallel_calls),
    Cell(
        "Codex CLI",
        "gateway `/mcp` as its MCP server, tool called",
        "/v1/responses + /mcp",
        gateway_mcp_tool,
    ),
]
