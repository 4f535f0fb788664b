from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.text.llama3 import Llama3Format
from llm_service.types import ToolCall
from tests.adapters.text.corpus import Case, check
from tests.adapters.text.roundtrip import assert_round_trip
from tests.adapters.text.strategies import calls

FMT = Llama3Format()
W = "get_weather"
CALL = '{"name": "get_weather", "parameters": {"city": "Oslo"}}'

CASES = [
    Case("bare json with parameters", CALL, None, [(W, {"city": "Oslo"})]),
    Case(
        "arguments key and surrounding whitespace",
        '\n {"name": "get_time", "arguments": {"tz": "UTC"}}\n',
        None,
        [("get_time", {"tz": "UTC"})],
    ),
    Case("python_tag and eom", f"<|python_tag|>{CALL}<|eom_id|>", None, [(W, {"city": "Oslo"})]),
    Case(
        "semicolon-separated calls",
        f'<|python_tag|>{CALL}; {{"name": "get_time", "parameters": {{}}}}',
        None,
        [(W, {"city": "Oslo"}), ("get_time", {})],
    ),
    Case(
        "text before python_tag",
        f"Checking the weather.<|python_tag|>{CALL}",
        "Checking the weather.",
        [(W, {"city": "Oslo"})],
    ),
    Case(
        "function tag",
        'Sure. <function=search>{"q": "a } </function> b"}</function> ok',
        "Sure. ok",
        [("search", {"q": "a } </function> b"})],
    ),
    Case(
        "llama 4 python block with json",
        f"<|python_start|>{CALL}<|python_end|>",
        None,
        [(W, {"city": "Oslo"})],
    ),
    Case(
        "llama 4 python block with a pythonic list",
        "<|python_start|>[get_weather(city='Oslo'), get_time()]<|python_end|>",
        None,
        [(W, {"city": "Oslo"}), ("get_time", {})],
    ),
    Case(
        "unicode and nesting",
        '{"name": "search", "parameters": {"q": "日本語 \\u00e9", "o": {"l": [[], {}]}}}',
        None,
        [("search", {"q": "日本語 é", "o": {"l": [[], {}]}})],
    ),
    Case("truncated bare json stays text", CALL[:-5], CALL[:-5]),
    Case(
        "truncated after python_tag stays text",
        f"<|python_tag|>{CALL[:-1]}",
        f"<|python_tag|>{CALL[:-1]}",
    ),
    Case(
        "undeclared tool stays text",
        '{"name": "delete_all", "parameters": {}}',
        '{"name": "delete_all", "parameters": {}}',
    ),
    Case(
        "json answer that is not a call",
        '{"city": "Oslo", "temp": 21}',
        '{"city": "Oslo", "temp": 21}',
    ),
    Case(
        "bare json followed by prose: recovered, the prose stays",
        f"{CALL} and then some words",
        "and then some words",
        [("get_weather", {"city": "Oslo"})],
    ),
    Case(
        "prose mentioning the format",
        'Reply like {"name": ..., "parameters": ...} please.',
        'Reply like {"name": ..., "parameters": ...} please.',
    ),
    Case(
        "reasoning first",
        f"<think>call {CALL}?</think>\n{CALL}",
        None,
        [(W, {"city": "Oslo"})],
        f"call {CALL}?",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_corpus_whole_and_streamed(case: Case) -> None:
    check(FMT, case)


@settings(max_examples=40, deadline=None)
@given(calls(), st.randoms(use_true_random=False))
def test_rendered_calls_parse_back(generated: list[ToolCall], rng: random.Random) -> None:
    assert_round_trip(FMT, generated, rng)


def test_prompt_asks_for_parameters_json() -> None:
    assert '"parameters": dictionary' in FMT.render_tools([], None)
