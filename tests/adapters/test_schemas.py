"""Per-target tool schema conversion (seed 002 for OpenAI), never mutating the original."""

from __future__ import annotations

import copy
from typing import Any

from adapters.schemas import anthropic_input_schema, ollama_parameters, openai_parameters

NESTED: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "x", "description": "Who"},
        "kind": {"type": "string", "enum": ["a", "b"], "default": "a"},
        "options": {
            "type": "object",
            "properties": {"timeout": {"type": "number", "default": 30}},
        },
        "tags": {"type": "array", "items": {"type": "string", "default": ""}},
        "labels": {"type": "object", "additionalProperties": {"type": "string", "default": ""}},
        "either": {"anyOf": [{"type": "integer", "default": 1}, {"type": "null"}]},
        "one": {"oneOf": [{"type": "object", "properties": {"v": {"default": 2}}}]},
        "all": {"allOf": [{"type": "string", "default": "z"}]},
    },
    "required": ["name"],
}


def _has_key(value: Any, key: str) -> bool:
    if isinstance(value, dict):
        return key in value or any(_has_key(v, key) for v in value.values())
    if isinstance(value, list):
        return any(_has_key(v, key) for v in value)
    return False


def test_openai_strips_default_at_every_depth_and_keeps_the_rest() -> None:
    original = copy.deepcopy(NESTED)

    converted = openai_parameters(NESTED)

    assert original == NESTED
    assert not _has_key(converted, "default")
    assert "$schema" not in converted
    assert converted["properties"]["kind"]["enum"] == ["a", "b"]
    assert converted["properties"]["name"]["description"] == "Who"
    assert converted["required"] == ["name"]


def test_openai_always_has_an_object_root_with_properties() -> None:
    assert openai_parameters({}) == {"type": "object", "properties": {}}
    assert openai_parameters({"type": "object"}) == {"type": "object", "properties": {}}


def test_anthropic_folds_a_root_union_into_one_object() -> None:
    schema = {
        "anyOf": [
            {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
            {
                "type": "object",
                "properties": {"id": {"type": "string"}, "name": {"type": "string"}},
                "required": ["id", "name"],
            },
        ]
    }
    original = copy.deepcopy(schema)

    converted = anthropic_input_schema(schema)

    assert schema == original
    assert converted == {
        "type": "object",
        "properties": {"id": {"type": "string"}, "name": {"type": "string"}},
        "required": ["id"],
    }


def test_anthropic_all_of_requires_every_part() -> None:
    schema = {
        "allOf": [
            {"properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"properties": {"b": {"type": "string"}}, "required": ["b"]},
        ]
    }

    assert anthropic_input_schema(schema)["required"] == ["a", "b"]


def test_ollama_inlines_references_and_describes_what_it_would_drop() -> None:
    schema = {
        "type": "object",
        "properties": {
            "when": {"type": "string", "format": "date-time", "description": "Start"},
            "where": {"$ref": "#/$defs/Place"},
            "node": {"$ref": "#/$defs/Node"},
        },
        "$defs": {
            "Place": {"type": "object", "properties": {"city": {"type": "string"}}},
            "Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}},
        },
    }
    original = copy.deepcopy(schema)

    converted = ollama_parameters(schema)

    assert schema == original
    assert not _has_key(converted, "$ref")
    assert not _has_key(converted, "$defs")
    assert converted["properties"]["where"]["properties"]["city"] == {"type": "string"}
    assert converted["properties"]["when"] == {
        "type": "string",
        "description": 'Start (format: "date-time")',
    }
    # A recursive reference stops at the second level instead of looping.
    assert converted["properties"]["node"]["properties"]["next"]["type"] == "object"


def test_openai_strips_default_under_conditionals_dependencies_and_name_schemas() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"kind": {"type": "string"}, "items": {"type": "array"}},
        "if": {"properties": {"kind": {"const": "a", "default": "a"}}},
        "then": {"properties": {"size": {"type": "integer", "default": 1}}},
        "else": {"properties": {"size": {"type": "string", "default": "s"}}},
        "dependentSchemas": {"kind": {"properties": {"why": {"default": "x"}}}},
        "dependencies": {
            "size": {"properties": {"unit": {"default": "cm"}}},
            "kind": ["size"],
        },
        "propertyNames": {"pattern": "^[a-z]+$", "default": "name"},
        "unevaluatedProperties": {"type": "string", "default": ""},
        "$defs": {
            "tuple": {
                "items": [{"type": "integer"}],
                "additionalItems": {"type": "string", "default": "more"},
            }
        },
    }
    original = copy.deepcopy(schema)

    converted = openai_parameters(schema)

    assert schema == original
    assert not _has_key(converted, "default")
    assert converted["dependencies"]["kind"] == ["size"]
    assert converted["if"]["properties"]["kind"]["const"] == "a"
    assert converted["propertyNames"]["pattern"] == "^[a-z]+$"
