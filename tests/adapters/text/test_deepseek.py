from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.text.deepseek import (
    CALL_BEGIN,
    CALL_END,
    CALLS_BEGIN,
    CALLS_END,
    SEP,
    DeepSeekFormat,
)
from llm_service.types import ToolCall
from tests.adapters.text.corpus import Case, check
from tests.adapters.text.roundtrip import assert_round_trip
from tests.adapters.text.strategies import calls

FMT = DeepSeekFormat()
W = "get_weather"


def v3(name: str, arguments: str) -> str:
    return f"{CALL_BEGIN}function{SEP}{name}\n```json\n{arguments}\n```{CALL_END}"


def v31(name: str, arguments: str) -> str:
    return f"{CALL_BEGIN}{name}{SEP}{arguments}{CALL_END}"


OSLO = '{"city": "Oslo"}'
TOKYO = '{"city": "東京"}'
UTC = '{"tz": "UTC"}'
TRICKY = '{"q": "' + CALL_END + ' ```"}'
NESTED = '{"a": {"b": [1, {"c": null}]}}'

CASES = [
    Case("v3 fenced call", CALLS_BEGIN + v3(W, OSLO) + CALLS_END, None, [(W, {"city": "Oslo"})]),
    Case(
        "v3.1 two calls with text before",
        "Let me see." + CALLS_BEGIN + v31(W, TOKYO) + "\n" + v31("get_time", "{}") + CALLS_END,
        "Let me see.",
        [(W, {"city": "東京"}), ("get_time", {})],
    ),
    Case(
        "markers inside argument strings are data",
        CALLS_BEGIN + v31("search", TRICKY) + CALLS_END,
        None,
        [("search", {"q": f"{CALL_END} ```"})],
    ),
    Case(
        "missing closing marker at end of output",
        CALLS_BEGIN + v31("get_time", UTC),
        None,
        [("get_time", {"tz": "UTC"})],
    ),
    Case(
        "reasoning then calls",
        f"<think>think {CALLS_BEGIN}</think>" + CALLS_BEGIN + v31("get_time", "{}") + CALLS_END,
        None,
        [("get_time", {})],
        f"think {CALLS_BEGIN}",
    ),
    Case(
        "truncated",
        CALLS_BEGIN + CALL_BEGIN + "get_time" + SEP + '{"tz": "U',
        CALLS_BEGIN + CALL_BEGIN + "get_time" + SEP + '{"tz": "U',
    ),
    Case(
        "undeclared tool",
        CALLS_BEGIN + v31("shutdown", "{}") + CALLS_END,
        CALLS_BEGIN + v31("shutdown", "{}") + CALLS_END,
    ),
    Case(
        "lookalike ascii markers are prose",
        "<|tool▁calls▁begin|> is not the real marker",
        "<|tool▁calls▁begin|> is not the real marker",
    ),
    Case(
        "nested arguments",
        CALLS_BEGIN + v3("search", NESTED) + CALLS_END + " done",
        "done",
        [("search", {"a": {"b": [1, {"c": None}]}})],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_corpus_whole_and_streamed(case: Case) -> None:
    check(FMT, case)


@settings(max_examples=40, deadline=None)
@given(calls(), st.randoms(use_true_random=False))
def test_rendered_calls_parse_back(generated: list[ToolCall], rng: random.Random) -> None:
    assert_round_trip(FMT, generated, rng)


def test_markers_are_the_full_width_forms() -> None:
    assert CALLS_BEGIN == "<\uff5ctool\u2581calls\u2581begin\uff5c>"
