from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.text.jsonscan import JsonReader, Verdict, read_value
from tests.adapters.text.strategies import json_values

KEYS = st.text(max_size=6)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": "}"} tail', 10),
        ('{"a": "\\"}"} x', 12),
        ('["]", {"b": ["[", "{"]}]', 24),
        ('"a \\\\" rest', 6),
        ('{"a": 1', Verdict.INCOMPLETE),
        ('{"a": "\\', Verdict.INCOMPLETE),
        ('{"a": [1}', Verdict.INVALID),
        ("nope", Verdict.INVALID),
        ("", Verdict.INCOMPLETE),
    ],
)
def test_value_end_knows_strings_and_escapes(text: str, expected: int | Verdict) -> None:
    assert JsonReader().value_end(text, 0) == expected


def test_balanced_but_not_json_is_invalid() -> None:
    assert read_value("{a: 1}", 0) is Verdict.INVALID
    assert read_value('{"a": NaN}', 0) is Verdict.INVALID


@settings(max_examples=60, deadline=None)
@given(json_values(KEYS).filter(lambda v: isinstance(v, dict | list | str)), st.text(max_size=5))
def test_growing_text_reads_like_the_whole_text(value: Any, tail: str) -> None:
    text = json.dumps(value, ensure_ascii=False) + tail
    reader = JsonReader()
    for size in range(len(text)):
        assert reader.value_end(text[:size], 0) in (Verdict.INCOMPLETE, len(text) - len(tail))
    assert reader.read_value(text, 0) == (value, len(text) - len(tail))
