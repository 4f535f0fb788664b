"""Argument validation against a tool's JSON Schema."""

from __future__ import annotations

from mcp_client.validation import ArgumentCheck

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer", "minimum": 1},
        "units": {"enum": ["metric", "imperial"]},
    },
    "required": ["city"],
}


def test_valid_arguments_have_no_problems() -> None:
    assert ArgumentCheck(SCHEMA).problems({"city": "Oslo", "days": 3, "units": "metric"}) == []


def test_each_problem_is_named() -> None:
    problems = ArgumentCheck(SCHEMA).problems({"days": 0, "units": "kelvin", "color": "red"})
    assert problems == [
        "unknown argument `color`",
        "'city' is a required property",
        "days: 0 is less than the minimum of 1",
        "units: 'kelvin' is not one of ['metric', 'imperial']",
    ]


def test_an_invalid_schema_is_reported_not_raised() -> None:
    problems = ArgumentCheck({"type": "no-such-type"}).problems({})
    assert len(problems) == 1
    assert problems[0].startswith("the tool's schema is invalid")


def test_one_check_serves_many_calls() -> None:
    check = ArgumentCheck(SCHEMA)
    assert check.problems({"city": "Oslo"}) == []
    assert check.problems({"city": 3}) == ["city: 3 is not of type 'string'"]
    assert check.problems({"city": "Oslo"}) == []
