"""Llama 3.2 / Llama 4: ``[f(a=1, b='x'), g()]``, read with Python's literal rules, never eval.

Only keyword arguments whose values are literals JSON can hold are calls: positional or
non-literal arguments (names, expressions, calls) mean the text is not a tool call.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from adapters.text.base import (
    THINK_TAGS,
    Block,
    Call,
    Parsed,
    choice_instruction,
    tools_json,
)
from adapters.text.jsonscan import JsonReader, Verdict, dumps
from adapters.text.whole import FENCE_OPENER, strip_end_tokens, whole_reply
from llm_service.types import ToolCall, ToolChoice, ToolResultMessage, ToolSpec

PYTHON_START = "<|python_start|>"
PYTHON_END = "<|python_end|>"
END_TOKENS = ("<|eot_id|>", "<|eom_id|>", "<|eot|>", "<|eom|>")


class _NotJSON(Exception):
    pass


def parse_call_list(source: str, tools: Collection[str]) -> tuple[Call, ...] | None:
    """``[f(a=1), g()]`` as calls, or None when it is anything else."""
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if not isinstance(tree.body, ast.List) or not tree.body.elts:
        return None
    calls = [_call(node, tools) for node in tree.body.elts]
    if any(c is None for c in calls):
        return None
    return tuple(c for c in calls if c is not None)


def parse_call(source: str, tools: Collection[str]) -> Call | None:
    """``f(a=1)`` as a call, or None when it is anything else."""
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return _call(tree.body, tools)


_PYTHON_SYNTAX = re.compile(r"[()\[\]{}'\"#]")
_PAIRS = {"(": ")", "[": "]", "{": "}"}


def python_end(text: str, start: int) -> int | Verdict:
    """Just past the bracket that closes the one at ``start``, reading Python strings as data;
    INVALID for a mismatched bracket, a comment or a line break in a one-line string."""
    expected: list[str] = []
    pos = start
    while True:
        match = _PYTHON_SYNTAX.search(text, pos)
        if match is None:
            return Verdict.INCOMPLETE
        char, pos = match.group(), match.end()
        if char in _PAIRS:
            expected.append(_PAIRS[char])
        elif char in ")]}":
            if expected.pop() != char:
                return Verdict.INVALID
            if not expected:
                return pos
        elif char == "#":
            return Verdict.INVALID
        else:
            string_end = _string_end(text, match.start(), char)
            if isinstance(string_end, Verdict):
                return string_end
            pos = string_end


def _string_end(text: str, start: int, quote: str) -> int | Verdict:
    triple = quote * 3
    if text.startswith(triple, start):
        end = text.find(triple, start + 3)
        while end > 0 and _escaped(text, end):
            end = text.find(triple, end + 1)
        return Verdict.INCOMPLETE if end < 0 else end + 3
    pos = start + 1
    while pos < len(text):
        char = text[pos]
        if char == "\\":
            pos += 2
        elif char == quote:
            return pos + 1
        elif char == "\n":
            return Verdict.INVALID
        else:
            pos += 1
    return Verdict.INCOMPLETE


def _escaped(text: str, index: int) -> bool:
    backslashes = len(text[:index]) - len(text[:index].rstrip("\\"))
    return backslashes % 2 == 1


def parse_builtin_call(source: str, tools: Collection[str]) -> tuple[Call, ...] | None:
    """Llama 3.1's built-in tool syntax, ``brave_search.call(query="...")``, as a call."""
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    node = tree.body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return None
    owner = node.func.value
    if node.func.attr != "call" or not isinstance(owner, ast.Name):
        return None
    call = call_arguments(owner.id, node, tools)
    return None if call is None else (call,)


def _call(node: ast.expr, tools: Collection[str]) -> Call | None:
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        return None
    return call_arguments(node.func.id, node, tools)


def call_arguments(name: str, node: ast.Call, tools: Collection[str]) -> Call | None:
    if node.args or name not in tools:
        return None
    arguments: dict[str, Any] = {}
    for keyword in node.keywords:
        if keyword.arg is None or keyword.arg in arguments:
            return None
        try:
            arguments[keyword.arg] = _json(ast.literal_eval(keyword.value))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError, _NotJSON):
            return None
    return Call(name, arguments)


def _json(value: Any) -> Any:
    """A literal as JSON: tuples become arrays; sets, bytes, complex, NaN are not JSON."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _NotJSON
        return value
    if isinstance(value, list | tuple):
        return [_json(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _json(v) for k, v in value.items()}
    raise _NotJSON


def render_call_list(calls: Sequence[ToolCall]) -> str:
    # repr of JSON values is a Python literal (True/False/None included).
    rendered = (
        f"{c.name}({', '.join(f'{k}={v!r}' for k, v in c.arguments.items())})" for c in calls
    )
    return f"[{', '.join(rendered)}]"


@dataclass(frozen=True)
class PythonicFormat:
    name: str = "pythonic"
    markers: tuple[str, ...] = (PYTHON_START,)
    openers: tuple[str, ...] = ("[", FENCE_OPENER)
    think_tags: tuple[str, str] = THINK_TAGS
    end_tokens: tuple[str, ...] = END_TOKENS
    results_as_tool_role: bool = True

    def render_tools(self, tools: Sequence[ToolSpec], choice: ToolChoice | None) -> str:
        return (
            "You are an expert in composing functions. You are given a question and a set of "
            "possible functions. Based on the question, you will need to make one or more "
            "function/tool calls to achieve the purpose.\n"
            "If you decide to invoke any of the function(s), you MUST put it in the format of "
            "[func_name1(params_name1=params_value1, params_name2=params_value2...), "
            "func_name2(params)]\n"
            "You SHOULD NOT include any other text in the response if you call a function.\n\n"
            "Here is a list of functions in JSON format that you can invoke.\n\n"
            f"{dumps(tools_json(tools, wrapped=False))}" + choice_instruction(choice)
        )

    def render_calls(self, calls: Sequence[ToolCall]) -> str:
        return render_call_list(calls)

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
        body_start = start + len(marker)
        end = text.find(PYTHON_END, body_start)
        if end < 0 and not final:
            return Verdict.INCOMPLETE
        body = text[body_start:] if end < 0 else text[body_start:end]
        calls = parse_call_list(strip_end_tokens(body, END_TOKENS), tools)
        if calls is None:
            return Verdict.INVALID
        return Parsed(calls, len(text) if end < 0 else end + len(PYTHON_END))

    def parse_leading(self, text: str, tools: Collection[str]) -> tuple[Call, ...] | None:
        return whole_reply(text, END_TOKENS, lambda body: parse_call_list(body, tools))
