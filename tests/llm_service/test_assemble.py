from __future__ import annotations

import pytest

from llm_service.assemble import StreamAssembler, finish_reason, parse_arguments
from llm_service.types import ToolCallDelta, Usage


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


def test_assembler_joins_fragments_by_index() -> None:
    assembler = StreamAssembler()
    assembler.add_tool_call(ToolCallDelta(1, "b", "second", '{"x"'))
    assembler.add_tool_call(ToolCallDelta(0, "a", "first", ""))
    assembler.add_tool_call(ToolCallDelta(1, arguments=": 2}"))
    assembler.add_text("hi")
    response = assembler.finish("stop", Usage(1, 2), "m")
    assert [(c.id, c.name, c.arguments) for c in response.message.tool_calls] == [
        ("a", "first", {}),
        ("b", "second", {"x": 2}),
    ]
    assert response.message.content == "hi"
    assert response.finish_reason == "tool_calls"
