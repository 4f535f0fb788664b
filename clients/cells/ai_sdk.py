"""The Vercel AI SDK (``ai`` with ``@ai-sdk/openai`` and ``@ai-sdk/anthropic``), on Node 22:
``generateText`` and ``streamText`` with a tool it runs itself (``clients/scripts/ai_sdk.mjs``)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable

from clients.cells.python_clients import MODEL, SCRIPTS, WEATHER
from clients.matrix import Cell, Context, expect, json_lines
from tests.support.fake_openai import FakeReply

KEY = "ai-sdk"


def _round(provider: str, mode: str) -> Callable[[Context], None]:
    def check(context: Context) -> None:
        openai = context.stack.openai
        openai.queue(FakeReply(tool_calls=[WEATHER]), FakeReply(text="It is sunny in Oslo."))
        env = {
            "GATEWAY_URL": context.stack.url,
            "GATEWAY_KEY": context.stack.key(KEY),
            "MODEL": MODEL,
        }
        # ES modules resolve packages from the script's folder: it runs from the install's.
        script = context.installed.npm / "ai_sdk.mjs"
        shutil.copy(SCRIPTS / "ai_sdk.mjs", script)
        node = context.installed.node_bin / "node"
        output = context.run([str(node), str(script), provider, mode], env)
        seen = json_lines(output)
        expect(seen == [{"text": "It is sunny in Oslo.", "steps": 2}], output[-2000:])
        results = [m for r in openai.requests for m in r["messages"] if m.get("role") == "tool"]
        expect("sunny in Oslo" in json.dumps(results), "the tool result never reached the model")

    return check


SDK = "Vercel AI SDK"
CELLS = [
    Cell(
        SDK,
        "`generateText`, tool, OpenAI chat provider",
        "/v1/chat/completions",
        _round("chat", "generate"),
    ),
    Cell(
        SDK,
        "`streamText`, tool, OpenAI chat provider",
        "/v1/chat/completions",
        _round("chat", "stream"),
    ),
    Cell(
        SDK,
        "`generateText`, tool, OpenAI responses provider",
        "/v1/responses",
        _round("responses", "generate"),
    ),
    Cell(
        SDK,
        "`streamText`, tool, OpenAI responses provider",
        "/v1/responses",
        _round("responses", "stream"),
    ),
    Cell(
        SDK,
        "`generateText`, tool, Anthropic provider",
        "/v1/messages",
        _round("anthropic", "generate"),
    ),
    Cell(
        SDK, "`streamText`, tool, Anthropic provider", "/v1/messages", _round("anthropic", "stream")
    ),
]
