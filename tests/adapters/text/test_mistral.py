from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.text.mistral import MistralFormat, mistral_id
from llm_service.types import ToolCall, ToolResultMessage
from tests.adapters.text.corpus import Case, check, stream
from tests.adapters.text.roundtrip import assert_round_trip
from tests.adapters.text.strategies import calls

FMT = MistralFormat()
W = "get_weather"

CASES = [
    Case(
        "old array form with ids",
        '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Oslo"}, "id": "a1b2c3d4e"}]',
        None,
        [(W, {"city": "Oslo"})],
    ),
    Case(
        "old form, two calls, text before",
        'Checking.[TOOL_CALLS][{"name": "get_time", "arguments": {}}, '
        '{"name": "search", "arguments": {"q": "[ARGS] ] }"}}]',
        "Checking.",
        [("get_time", {}), ("search", {"q": "[ARGS] ] }"})],
    ),
    Case(
        "new form",
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}',
        None,
        [(W, {"city": "Paris"})],
    ),
    Case(
        "new form with call ids, several calls",
        '[TOOL_CALLS]get_weather[CALL_ID]abc123xyz[ARGS]{"city": "Köln"}'
        "[TOOL_CALLS]get_time[CALL_ID]abc123xyz[ARGS]{}",
        None,
        [(W, {"city": "Köln"}), ("get_time", {})],
    ),
    Case(
        "reasoning in THINK",
        "[THINK]maybe [TOOL_CALLS]get_time[ARGS]{}[/THINK]It is late.",
        "It is late.",
        [],
        "maybe [TOOL_CALLS]get_time[ARGS]{}",
    ),
    Case(
        "nested unicode arguments",
        '[TOOL_CALLS]search[ARGS]{"q": "\\u00fc\\"", "f": [{"x": [1, {"y": "}"}]}]}',
        None,
        [("search", {"q": 'ü"', "f": [{"x": [1, {"y": "}"}]}]})],
    ),
    Case(
        "truncated new form",
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Par',
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Par',
    ),
    Case(
        "undeclared tool",
        "[TOOL_CALLS]drop_db[ARGS]{}",
        "[TOOL_CALLS]drop_db[ARGS]{}",
    ),
    Case(
        "marker in prose",
        "The [TOOL_CALLS] token starts calls.",
        "The [TOOL_CALLS] token starts calls.",
    ),
    Case(
        "one bad call leaves the whole array as text",
        '[TOOL_CALLS][{"name": "get_time", "arguments": {}}, {"name": "nope", "arguments": {}}]',
        '[TOOL_CALLS][{"name": "get_time", "arguments": {}}, {"name": "nope", "arguments": {}}]',
    ),
    Case(
        "a broken call does not hide the next one",
        '[TOOL_CALLS]get_time[ARGS]{tz} [TOOL_CALLS]get_time[ARGS]{"tz": "UTC"}',
        "[TOOL_CALLS]get_time[ARGS]{tz}",
        [("get_time", {"tz": "UTC"})],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_corpus_whole_and_streamed(case: Case) -> None:
    check(FMT, case)


def test_model_written_ids_are_replaced_by_unique_ones() -> None:
    text = "[TOOL_CALLS]get_time[CALL_ID]abc123xyz[ARGS]{}" * 2
    streamed = stream(FMT, [text])
    assert len(set(streamed.ids)) == 2
    assert "abc123xyz" not in streamed.ids


@settings(max_examples=40, deadline=None)
@given(calls(), st.randoms(use_true_random=False))
def test_rendered_calls_parse_back(generated: list[ToolCall], rng: random.Random) -> None:
    assert_round_trip(FMT, generated, rng)


def test_results_carry_nine_character_ids() -> None:
    rendered = FMT.render_result(ToolResultMessage("call_abc", "42"), "get_time")
    call_id = mistral_id("call_abc")
    assert rendered == f'[TOOL_RESULTS]{{"content": "42", "call_id": "{call_id}"}}[/TOOL_RESULTS]'
    assert len(mistral_id("call_abc")) == 9
