from __future__ import annotations

import pytest

from llm_service.assemble import finish_reason, parse_arguments


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, ({}, None)),
        ("", ({}, None)),
        ("   ", ({}, None)),
        ('{"a": 1}', ({"a": 1}, None)),
        ('"{\\"a\\": 1}"', ({"a": 1}, None)),
        ({"b": 2}, ({"b": 2}, None)),
        ("[1, 2]", ({}, "[1, 2]")),
        ("{not json", ({}, "{not json")),
    ],
)
def test_parse_arguments(raw: object, expected: object) -> None:
    assert parse_arguments(raw) == expected  # type: ignore[arg-type]


def test_finish_reason_is_tool_calls_unless_cut_off() -> None:
    assert finish_reason("stop", True) == "tool_calls"
    assert finish_reason("length", True) == "length"
    assert finish_reason("stop", False) == "stop"
