"""docs/clients.md: the matrix as it last ran, with the versions it ran."""

from __future__ import annotations

import platform
from datetime import UTC, datetime

from clients.install import Installed
from clients.matrix import Result

NPM = (
    "@anthropic-ai/claude-code",
    "@openai/codex",
    "ai",
    "@ai-sdk/openai",
    "@ai-sdk/anthropic",
    "@modelcontextprotocol/inspector",
    "node",
)
PYPI = ("openai-agents", "langchain-openai", "langchain-anthropic", "mcp")

INTRO = """# Clients through the gateway

What product teams run, unchanged, against the gateway: coding agents, agent frameworks and MCP
clients. `make clients` installs each from its registry (npm, PyPI) into `.clients/`, starts the
gateway on 127.0.0.1 with the project's wire-faithful provider fakes upstream (scripted per cell:
the answer, or the tool call the model makes) and a real MCP tool server behind `/mcp`, runs
every cell and writes this page. It is not part of `make test`: it downloads the clients. The
code: `clients/` (`cells/` has one module per client).

A failed cell shows what the client sent and what the gateway answered (the last exchanges). A
passing cell lists any request the gateway refused on the way (a client that probes and carries
on), so nothing a client works around goes unseen.
"""

NOTES = """## What the clients needed, and how the gateway serves it

- **Claude Code** for a model id it does not know (a company alias) sends a `system` message
  inside `messages` (Anthropic's mid-conversation system messages): kept in its place for the
  providers that take it there. It asks for `thinking: {type: adaptive}` with
  `output_config.effort`: the effort reaches OpenAI models as `reasoning_effort` (`max` is
  `xhigh`). Tools marked `defer_loading` (tool search) are not offered up front. Its `/context`
  calls `POST /v1/messages/count_tokens`: counted by the gateway with Claude's tokenizer, an
  estimate for other models' (no model call, nothing charged). Its beta headers
  (`anthropic-beta`) and `?beta=true` are accepted; fields the gateway does not carry
  (`context_management`, `thinking.display`) are ignored. `HEAD /` answers 200.
- **Codex CLI** sends function tools grouped in `{"type": "namespace"}` tools (its sub-agent
  tools, and every MCP server's tools): a translated model is offered them as
  `namespace__name`, and its calls come back as `function_call` items with `name` and
  `namespace`. It sends `web_search` on every request: a built-in tool no operator mapped to an
  MCP tool is not offered to the model (it would run on OpenAI's servers, outside the gateway's
  policy). It sends `store: false`, `include: ["reasoning.encrypted_content"]`, `reasoning`,
  `prompt_cache_key` and `client_metadata`: passed through to an OpenAI model, ignored when
  translated. This Codex release has no chat-completions wire (`wire_api = "chat"` is gone), so
  there is no chat row.
- MCP clients (the SDK, the Inspector, Claude Code, Codex, the Agents SDK) use `/mcp` statelessly:
  any replica serves any request. A call that needs approval waits with progress, or becomes a
  task (`tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`: a cancelled task reports
  `cancelled`); a `notifications/cancelled` that reaches a replica not running the call is
  relayed to the others over Redis (`redis_url`).
- Every client's traffic is an ordinary request under its key: usage and cost, budgets, rate
  limits, and for a tool called through `/mcp`, policy, approval and audit.

Limits, as they stand: `count_tokens` is exact for Claude's tokenizer only (an estimate for other
models); Claude Code's tool search (`defer_loading` tools found through `tool_reference` results)
is not carried, so deferred tools stay unavailable to the model; built-in tools an operator did
not map to an MCP tool are not offered, so the model answers without them; cancelling a running
call across replicas needs Redis.

Nothing here needed a private extension: every field and endpoint above is one the provider
APIs or the MCP spec define.
"""


def versions(installed: Installed) -> dict[str, str]:
    found = {f"npm `{name}`": installed.npm_version(name) for name in NPM}
    found.update({f"PyPI `{name}`": installed.pip_version(name) for name in PYPI})
    return found


def document(results: list[Result], versions: dict[str, str]) -> str:
    passed = sum(result.passed for result in results)
    lines = [
        INTRO,
        f"Last run: {datetime.now(UTC):%Y-%m-%d} on {platform.system()} {platform.machine()}, "
        f"{passed} of {len(results)} cells passed.",
        "",
        "| client | case | through | result | refused on the way |",
        "|---|---|---|---|---|",
    ]
    for result in results:
        cell = result.cell
        outcome = "pass" if result.passed else "**fail** (below)"
        refused = "; ".join(f"`{line}`" for line in result.refused) or ""
        lines.append(f"| {cell.client} | {cell.case} | `{cell.wire}` | {outcome} | {refused} |")
    lines += ["", "## Versions", "", "| package | version |", "|---|---|"]
    lines += [f"| {name} | {version} |" for name, version in versions.items()]
    lines += ["", NOTES]
    failed = [result for result in results if not result.passed]
    if failed:
        lines += ["## Failures", ""]
    for result in failed:
        lines += [f"### {result.cell.client}: {result.cell.case}", "", "```", result.detail]
        lines += [*result.exchanges, "```", ""]
    return "\n".join(lines).rstrip() + "\n"
