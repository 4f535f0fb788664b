"""The card's argument table: each declared parameter beside its value, default and enum."""

from __future__ import annotations

from admin.ui.card_details import ArgumentRow, argument_rows

SCHEMA = {
    "type": "object",
    "properties": {
        "service": {"type": "string", "enum": ["api", "web"], "description": "which one"},
        "region": {"type": "string", "default": "eu-west-1"},
    },
    "required": ["service"],
}


def test_declared_parameters_show_value_default_and_enum() -> None:
    rows = argument_rows(SCHEMA, {"service": "api"})

    assert rows == [
        ArgumentRow("service", '"api"', None, ['"api"', '"web"'], "string", "which one"),
        ArgumentRow("region", None, '"eu-west-1"', [], "string", None),
    ]


def test_a_schema_without_properties_lists_the_arguments_as_sent() -> None:
    # Any argument is allowed there, so the reviewer reads each one; nothing is flagged.
    rows = argument_rows({"type": "object"}, {"path": "/tmp/x", "force": True})

    assert rows == [
        ArgumentRow("path", '"/tmp/x"', None, [], None, None),
        ArgumentRow("force", "true", None, [], None, None),
    ]
    assert argument_rows(None, {}) == []
