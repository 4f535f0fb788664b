from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.text.generic import GenericFormat
from llm_service.types import ToolCall
from tests.adapters.text.corpus import Case, check
from tests.adapters.text.roundtrip import assert_round_trip
from tests.adapters.text.strategies import calls

FMT = GenericFormat()
W = "get_weather"
CALL = '{"name": "get_weather", "arguments": {"city": "Oslo"}}'

CASES = [
    Case("call object", CALL, None, [(W, {"city": "Oslo"})]),
    Case("tool_call wrapper", f'{{"tool_call": {CALL}}}', None, [(W, {"city": "Oslo"})]),
    Case(
        "tool_calls list",
        f'{{"tool_calls": [{CALL}, {{"name": "get_time", "arguments": {{}}}}]}}',
        None,
        [(W, {"city": "Oslo"}), ("get_time", {})],
    ),
    Case("array", f"[{CALL}]", None, [(W, {"city": "Oslo"})]),
    Case("fenced whole reply", f"```json\n{CALL}\n```\n", None, [(W, {"city": "Oslo"})]),
    Case(
        "fence inside a string",
        '```json\n{"name": "search", "arguments": {"q": "```\\n}"}}\n```',
        None,
        [("search", {"q": "```\n}"})],
    ),
    Case(
        "openai function wrapper",
        '{"type": "function", "function": {"name": "get_time", "arguments": "{}"}}',
        None,
        [("get_time", {})],
    ),
    # The recovery pass: a declared call is a call next to prose too; the prose stays content.
    Case("text before a call", f"Calling: {CALL}", "Calling:", [("get_weather", {"city": "Oslo"})]),
    Case("text after a call", f"{CALL}\nThanks!", "Thanks!", [("get_weather", {"city": "Oslo"})]),
    Case("truncated", CALL[:-3], CALL[:-3]),
    Case(
        "undeclared",
        '{"name": "exec", "arguments": {}}',
        '{"name": "exec", "arguments": {}}',
    ),
    Case(
        "a json answer is content",
        '{"answer": 42, "unit": "°C"}',
        '{"answer": 42, "unit": "°C"}',
    ),
    Case(
        "prose with braces",
        "Sets look like {1, 2} in Python.",
        "Sets look like {1, 2} in Python.",
    ),
    Case(
        "reasoning before a call",
        f"<think>{CALL}</think>\n{CALL}",
        None,
        [(W, {"city": "Oslo"})],
        CALL,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_corpus_whole_and_streamed(case: Case) -> None:
    check(FMT, case)


def test_without_tools_nothing_is_held_or_parsed() -> None:
    from tests.adapters.text.corpus import stream

    streamed = stream(FMT, list(CALL), frozenset())
    assert streamed.content == CALL
    assert streamed.calls == []


@settings(max_examples=40, deadline=None)
@given(calls(), st.randoms(use_true_random=False))
def test_rendered_calls_parse_back(generated: list[ToolCall], rng: random.Random) -> None:
    assert_round_trip(FMT, generated, rng)
