"""Llama 3.1 / 3.3 JSON calls, built-in tools, ``<function=name>`` and Llama 4 python blocks.

Calls are ``{"name": .., "parameters": ..}`` (or ``arguments``), as the whole reply or after
``<|python_tag|>``, several separated by ``;`` or a line break, optionally ending in
``<|eom_id|>``. After ``<|python_tag|>`` a model may also use the built-in tool syntax
(``brave_search.call(query="...")``) or write code for ``code_interpreter``. Llama 4 wraps calls
in ``<|python_start|>...<|python_end|>`` (JSON or the pythonic list); Llama 3.2 may answer with
the pythonic list as the whole reply.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from adapters.text.base import (
    THINK_TAGS,
    Block,
    Call,
    Parsed,
    calls_from_values,
    choice_instruction,
    closing_pending,
    tools_json,
)
from adapters.text.jsonscan import JsonReader, Verdict, dumps, skip_ws
from adapters.text.pythonic import (
    PYTHON_END,
    PYTHON_START,
    parse_builtin_call,
    parse_call_list,
)
from adapters.text.tags import FUNCTION, function_tag
from adapters.text.whole import FENCE_OPENER, json_calls, strip_end_tokens, whole_reply
from llm_service.types import ToolCall, ToolChoice, ToolResultMessage, ToolSpec

PYTHON_TAG = "<|python_tag|>"
END_TOKENS = ("<|eom_id|>", "<|eot_id|>", "<|eom|>", "<|eot|>")
# The built-in tool a bare code block after <|python_tag|> is for (Meta's prompt format).
CODE_INTERPRETER = "code_interpreter"


@dataclass(frozen=True)
class Llama3Format:
    name: str = "llama3"
    markers: tuple[str, ...] = (PYTHON_TAG, FUNCTION, PYTHON_START)
    openers: tuple[str, ...] = ("{", "[", FENCE_OPENER)
    think_tags: tuple[str, str] = THINK_TAGS
    end_tokens: tuple[str, ...] = END_TOKENS
    results_as_tool_role: bool = True

    def render_tools(self, tools: Sequence[ToolSpec], choice: ToolChoice | None) -> str:
        functions = "\n\n".join(dumps(t) for t in tools_json(tools))
        return (
            "Environment: ipython\n\n"
            "Given the following functions, please respond with a JSON for a function call "
            "with its proper arguments that best answers the given prompt.\n\n"
            'Respond in the format {"name": function name, "parameters": dictionary of '
            "argument name and its value}. Do not use variables.\n\n"
            f"{functions}" + choice_instruction(choice)
        )

    def render_calls(self, calls: Sequence[ToolCall]) -> str:
        return "; ".join(dumps({"name": c.name, "parameters": c.arguments}) for c in calls)

    def render_result(self, result: ToolResultMessage, name: str) -> str:
        return result.text

    def parse_block(
        self,
        text: str,
        start: int,
        marker: str,
        *,
        final: bool,
        tools: Collection[str],
        reader: JsonReader,
    ) -> Block:
        body = start + len(marker)
        if marker == PYTHON_TAG:
            return _python_tag(text, skip_ws(text, body), final, tools, reader)
        if marker == FUNCTION:
            return function_tag(text, body, marker, final=final, tools=tools, reader=reader)
        return _python_block(text, body, final, tools)

    def parse_leading(self, text: str, tools: Collection[str]) -> tuple[Call, ...] | None:
        return whole_reply(text, END_TOKENS, lambda body: _whole_body(body, tools))


def _whole_body(body: str, tools: Collection[str]) -> tuple[Call, ...] | None:
    if body.startswith("["):
        return json_calls(body, tools) or parse_call_list(body, tools)
    return _json_only(body, tools)


def _json_only(body: str, tools: Collection[str]) -> tuple[Call, ...] | None:
    """``{..}; {..}`` (or another whole-reply JSON shape) and nothing else."""
    block = _json_calls(body, 0, True, tools, JsonReader())
    if isinstance(block, Parsed) and not body[block.end :].strip():
        return block.calls
    return json_calls(body, tools)


def _python_tag(
    text: str, start: int, final: bool, tools: Collection[str], reader: JsonReader
) -> Block:
    """JSON calls, or up to the end-of-message token a built-in call or code."""
    if start >= len(text):
        return Verdict.INVALID if final else Verdict.INCOMPLETE
    if text[start] == "{":
        return _json_calls(text, start, final, tools, reader)
    found = [i for i in (text.find(t, start) for t in END_TOKENS) if i >= 0]
    if not found and not final:
        return Verdict.INCOMPLETE
    end = min(found) if found else len(text)
    code = text[start:end].rstrip()
    calls = (
        parse_call_list(code, tools) if code.startswith("[") else parse_builtin_call(code, tools)
    )
    if calls is None and CODE_INTERPRETER in tools and code:
        calls = (Call(CODE_INTERPRETER, {"code": code}),)
    if calls is None:
        return Verdict.INVALID
    token = next((t for t in END_TOKENS if text.startswith(t, end)), "")
    return Parsed(calls, end + len(token))


def _json_calls(
    text: str, start: int, final: bool, tools: Collection[str], reader: JsonReader
) -> Block:
    """``{..}; {..}`` then an optional end-of-message token."""
    read = reader.read_sequence(text, start, final)
    if isinstance(read, Verdict):
        return read
    values, end = read
    calls = calls_from_values(values, tools)
    if calls is None:
        return Verdict.INVALID
    after = skip_ws(text, end)
    for token in END_TOKENS:
        if text.startswith(token, after):
            return Parsed(calls, after + len(token))
        if not final and closing_pending(text, end, token):
            return Verdict.INCOMPLETE
    return Parsed(calls, end)


def _python_block(text: str, start: int, final: bool, tools: Collection[str]) -> Block:
    """Llama 4: ``<|python_start|>`` JSON calls or a pythonic list ``<|python_end|>``."""
    end = text.find(PYTHON_END, start)
    if end < 0 and not final:
        return Verdict.INCOMPLETE
    body = strip_end_tokens(text[start:] if end < 0 else text[start:end], END_TOKENS)
    calls = parse_call_list(body, tools) if body.startswith("[") else None
    if calls is None:
        calls = _json_only(body, tools)
    if calls is None:
        return Verdict.INVALID
    return Parsed(calls, len(text) if end < 0 else end + len(PYTHON_END))
