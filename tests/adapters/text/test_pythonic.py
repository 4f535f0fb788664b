from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.text.pythonic import PythonicFormat
from llm_service.types import ToolCall
from tests.adapters.text.corpus import Case, check
from tests.adapters.text.roundtrip import assert_round_trip
from tests.adapters.text.strategies import calls

FMT = PythonicFormat()
W = "get_weather"

CASES = [
    Case("one call", "[get_weather(city='Oslo')]", None, [(W, {"city": "Oslo"})]),
    Case(
        "several calls and literal types",
        '[get_weather(city="Lima", days=3, metric=True, hint=None), get_time()]',
        None,
        [(W, {"city": "Lima", "days": 3, "metric": True, "hint": None}), ("get_time", {})],
    ),
    Case(
        "nested literals, tuples become arrays",
        "[search(q='a]b)c', opts={'k': [1, 2.5, (3, 4)], 'n': {'deep': False}})]",
        None,
        [("search", {"q": "a]b)c", "opts": {"k": [1, 2.5, [3, 4]], "n": {"deep": False}}})],
    ),
    Case(
        "escapes and unicode",
        "[search(q='it\\'s \"x\" \\\\ 😀 é')]",
        None,
        [("search", {"q": 'it\'s "x" \\ 😀 é'})],
    ),
    Case(
        "llama 4 python block after text",
        "On it. <|python_start|>[get_time(tz='UTC')]<|python_end|>",
        "On it.",
        [("get_time", {"tz": "UTC"})],
    ),
    Case("end of turn token", "[get_time()]<|eot_id|>", None, [("get_time", {})]),
    Case("positional arguments are not calls", "[get_weather('Oslo')]", "[get_weather('Oslo')]"),
    Case(
        "non-literal arguments are not calls",
        "[get_weather(city=__import__('os').getcwd())]",
        "[get_weather(city=__import__('os').getcwd())]",
    ),
    Case("a name is not a literal", "[get_weather(city=x)]", "[get_weather(city=x)]"),
    Case("sets are not JSON", "[search(q={1, 2})]", "[search(q={1, 2})]"),
    Case("undeclared tool", "[os_system(cmd='ls')]", "[os_system(cmd='ls')]"),
    Case("truncated", "[get_weather(city='Os", "[get_weather(city='Os"),
    Case("a list in prose", "[1] See the notes.", "[1] See the notes."),
    Case(
        "text before a list: recovered, the text stays",
        "Here: [get_time()]",
        "Here:",
        [("get_time", {})],
    ),
    Case("empty list", "[]", "[]"),
    Case(
        "reasoning before the call",
        "<think>need [get_time()]</think>[get_weather(city='Rome')]",
        None,
        [(W, {"city": "Rome"})],
        "need [get_time()]",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_corpus_whole_and_streamed(case: Case) -> None:
    check(FMT, case)


@settings(max_examples=40, deadline=None)
@given(calls(identifier_keys=True), st.randoms(use_true_random=False))
def test_rendered_calls_parse_back(generated: list[ToolCall], rng: random.Random) -> None:
    assert_round_trip(FMT, generated, rng)
