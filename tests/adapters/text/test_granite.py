from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.text.granite import GraniteFormat
from llm_service.types import ToolCall
from tests.adapters.text.corpus import Case, check
from tests.adapters.text.roundtrip import assert_round_trip
from tests.adapters.text.strategies import calls

FMT = GraniteFormat()
W = "get_weather"

CASES = [
    Case(
        "tool_call token with an array",
        '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Oslo"}}]',
        None,
        [(W, {"city": "Oslo"})],
    ),
    Case(
        "tool_call tag with closing tag and text",
        'Sure.<tool_call>[{"name": "get_time", "arguments": {}}, {"name": "search", '
        '"arguments": {"q": "<tool_call>[]"}}]</tool_call> Bye.',
        "Sure. Bye.",
        [("get_time", {}), ("search", {"q": "<tool_call>[]"})],
    ),
    Case(
        "tool_call tag without closing tag",
        '<tool_call>[{"name": "get_time", "arguments": {"tz": "CET"}}]',
        None,
        [("get_time", {"tz": "CET"})],
    ),
    Case(
        "function_call objects",
        '<function_call> {"name": "get_weather", "arguments": {"city": "Oslo"}}\n'
        '<function_call> {"name": "get_time", "arguments": {}}',
        None,
        [(W, {"city": "Oslo"}), ("get_time", {})],
    ),
    Case(
        "unicode and nesting",
        '<|tool_call|>[{"name": "search", "arguments": {"q": "Ελλάδα", "f": {"g": [{"h": []}]}}}]',
        None,
        [("search", {"q": "Ελλάδα", "f": {"g": [{"h": []}]}})],
    ),
    Case(
        "truncated",
        '<|tool_call|>[{"name": "get_time", "arguments": {}',
        '<|tool_call|>[{"name": "get_time", "arguments": {}',
    ),
    Case(
        "undeclared tool",
        '<|tool_call|>[{"name": "format_disk", "arguments": {}}]',
        '<|tool_call|>[{"name": "format_disk", "arguments": {}}]',
    ),
    Case(
        "function_call with an array: not its shape, recovered with its markup",
        '<function_call> [{"name": "get_time", "arguments": {}}]',
        None,
        [("get_time", {})],
    ),
    Case(
        "prose",
        "Granite writes <|tool_call|> before calls.",
        "Granite writes <|tool_call|> before calls.",
    ),
    Case(
        "reasoning",
        '<think>use <|tool_call|>[{"name": "get_time", "arguments": {}}]</think>Noon.',
        "Noon.",
        [],
        'use <|tool_call|>[{"name": "get_time", "arguments": {}}]',
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_corpus_whole_and_streamed(case: Case) -> None:
    check(FMT, case)


@settings(max_examples=40, deadline=None)
@given(calls(), st.randoms(use_true_random=False))
def test_rendered_calls_parse_back(generated: list[ToolCall], rng: random.Random) -> None:
    assert_round_trip(FMT, generated, rng)
