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


def test_formats_are_checked_not_just_annotated() -> None:
    check = ArgumentCheck(
        {
            "type": "object",
            "properties": {
                "when": {"type": "string", "format": "date-time"},
                "day": {"type": "string", "format": "date"},
                "mail": {"type": "string", "format": "email"},
                "host": {"type": "string", "format": "ipv4"},
                "id": {"type": "string", "format": "uuid"},
            },
        }
    )
    good = {
        "when": "2025-11-25T10:30:00+01:00",
        "day": "2025-11-25",
        "mail": "ana@example.com",
        "host": "10.0.0.1",
        "id": "0b2c9c1e-8f5a-4a8e-9d7e-2f1c3b4a5d6e",
    }
    assert check.problems(good) == []
    assert check.problems({"when": "2025-11-25T10:30:00Z"}) == []
    bad = {
        "when": "next tuesday",
        "day": "2025-02-30",
        "mail": "nobody",
        "host": "10.0.0",
        "id": "not-a-uuid",
    }
    assert check.problems(bad) == [
        "day: '2025-02-30' is not a 'date'",
        "host: '10.0.0' is not a 'ipv4'",
        "id: 'not-a-uuid' is not a 'uuid'",
        "mail: 'nobody' is not a 'email'",
        "when: 'next tuesday' is not a 'date-time'",
    ]
    # A date-time needs its offset: a local time means nothing to a server elsewhere.
    assert check.problems({"when": "2025-11-25T10:30:00"}) == [
        "when: '2025-11-25T10:30:00' is not a 'date-time'"
    ]
