from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.text.hermes import HermesFormat
from llm_service.types import ToolCall, ToolResultMessage, ToolSpec
from tests.adapters.text.corpus import Case, check
from tests.adapters.text.roundtrip import assert_round_trip
from tests.adapters.text.strategies import calls

FMT = HermesFormat()
W = "get_weather"

CASES = [
    Case(
        "one call",
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>',
        None,
        [(W, {"city": "Oslo"})],
    ),
    Case(
        "arguments before name",
        '<tool_call>{"arguments": {"city": "Lima"}, "name": "get_weather"}</tool_call>',
        None,
        [(W, {"city": "Lima"})],
    ),
    Case(
        "text around and two calls",
        'Let me look.\n<tool_call>{"name": "get_weather", "arguments": {"city": "A"}}'
        '</tool_call>\n<tool_call>{"name": "get_time", "arguments": {}}</tool_call>\nDone.',
        "Let me look.\nDone.",
        [(W, {"city": "A"}), ("get_time", {})],
    ),
    Case(
        "closing tag and braces inside strings are data",
        '<tool_call>{"name": "search", "arguments": {"q": "a </tool_call> b } { \\" \\\\"}}'
        "</tool_call>",
        None,
        [("search", {"q": 'a </tool_call> b } { " \\'})],
    ),
    Case(
        "nested and unicode",
        '<tool_call>{"name": "search", "arguments": {"q": "São Paulo 😀", "f": {"a": [1, '
        '{"b": null}], "c": true}}}</tool_call>',
        None,
        [("search", {"q": "São Paulo 😀", "f": {"a": [1, {"b": None}], "c": True}})],
    ),
    Case(
        "missing closing tag at end of output",
        'Sure.<tool_call>\n{"name": "get_time", "arguments": {"tz": "UTC"}}\n',
        "Sure.",
        [("get_time", {"tz": "UTC"})],
    ),
    Case(
        "truncated call stays text",
        'Sure.<tool_call>{"name": "get_time", "arguments": {"tz": "UT',
        'Sure.<tool_call>{"name": "get_time", "arguments": {"tz": "UT',
    ),
    Case("plain reply is unchanged, whitespace too", "  Hello\n\n", "  Hello\n\n"),
    Case(
        "truncated reply is unchanged",
        '\nOK <tool_call>{"name": "get_time", "argu\n',
        '\nOK <tool_call>{"name": "get_time", "argu\n',
    ),
    Case(
        "undeclared tool stays text",
        '<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>',
        '<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>',
    ),
    Case(
        "prose that only looks like a call",
        'Use <tool_call> tags like <tool_call>this</tool_call>, or {"name": "get_time"}.',
        'Use <tool_call> tags like <tool_call>this</tool_call>, or {"name": "get_time"}.',
    ),
    Case(
        "extra keys mean no call",
        '<tool_call>{"name": "get_weather", "city": "Oslo"}</tool_call>',
        '<tool_call>{"name": "get_weather", "city": "Oslo"}</tool_call>',
    ),
    Case(
        "double-encoded arguments",
        '<tool_call>{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}</tool_call>',
        None,
        [(W, {"city": "Rome"})],
    ),
    Case(
        "reasoning is not content and its calls are not made",
        '<think>maybe <tool_call>{"name": "get_time", "arguments": {}}</tool_call></think>'
        "It is noon.",
        "It is noon.",
        [],
        'maybe <tool_call>{"name": "get_time", "arguments": {}}</tool_call>',
    ),
    Case(
        "a partial marker that never completes is text",
        "Compare a<b and <tool_cal",
        "Compare a<b and <tool_cal",
    ),
    Case(
        "text after a call that is not the closing tag: recovered, the text stays",
        '<tool_call>{"name": "get_time", "arguments": {}} oops',
        "oops",
        [("get_time", {})],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_corpus_whole_and_streamed(case: Case) -> None:
    check(FMT, case)


@settings(max_examples=40, deadline=None)
@given(calls(), st.randoms(use_true_random=False))
def test_rendered_calls_parse_back(generated: list[ToolCall], rng: random.Random) -> None:
    assert_round_trip(FMT, generated, rng)


def test_tools_and_results_render_in_qwen_style() -> None:
    spec = ToolSpec(W, "Weather", {"type": "object"})
    prompt = FMT.render_tools([spec], "required")
    assert "<tools>" in prompt
    assert '"name": "get_weather"' in prompt
    assert "must call" in prompt
    result = ToolResultMessage("call_1", "sunny")
    assert FMT.render_result(result, W) == "<tool_response>\nsunny\n</tool_response>"
