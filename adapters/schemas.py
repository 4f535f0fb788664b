"""Tool parameter schemas as each provider accepts them.

Every function deep-copies: the standardized tool (and the caller's schema) is never mutated, so
one tool list can be offered to several providers in one process.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from llm_service.types import JSON

_COMBINATORS = ("anyOf", "oneOf", "allOf")
# Keys whose value is one sub-schema, and keys whose value maps names to sub-schemas.
_SCHEMA_KEYS = ("items", "additionalProperties", "not", "contains")
_SCHEMA_MAP_KEYS = ("properties", "patternProperties", "$defs", "definitions")
# Every other place a sub-schema may sit: where OpenAI must not find a `default` either.
_MORE_SCHEMA_KEYS = (
    "if",
    "then",
    "else",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
    "contentSchema",
)
_MORE_SCHEMA_MAP_KEYS = ("dependentSchemas", "dependencies")  # `dependencies` may also hold lists


def _children(schema: JSON) -> list[Any]:
    children: list[Any] = [schema.get(key) for key in _SCHEMA_KEYS]
    for key in (*_COMBINATORS, "items", "prefixItems"):  # lists of sub-schemas
        if isinstance(schema.get(key), list):
            children.extend(schema[key])
    for key in _SCHEMA_MAP_KEYS:  # names mapped to sub-schemas
        if isinstance(schema.get(key), dict):
            children.extend(schema[key].values())
    return children


def _every_child(schema: JSON) -> list[Any]:
    children = _children(schema) + [schema.get(key) for key in _MORE_SCHEMA_KEYS]
    for key in _MORE_SCHEMA_MAP_KEYS:
        if isinstance(schema.get(key), dict):
            children.extend(schema[key].values())
    return children


def _walk(
    schema: Any,
    visit: Callable[[JSON], None],
    children: Callable[[JSON], list[Any]] = _children,
) -> None:
    """Apply ``visit`` to every sub-schema, children first (in place: callers pass a copy)."""
    if not isinstance(schema, dict):
        return
    for child in children(schema):
        _walk(child, visit, children)
    visit(schema)


def _object_root(schema: JSON) -> JSON:
    schema.pop("$schema", None)
    if "type" not in schema and not any(k in schema for k in _COMBINATORS):
        schema["type"] = "object"
    if schema.get("type") == "object" and not isinstance(schema.get("properties"), dict):
        schema["properties"] = {}
    return schema


def openai_parameters(schema: JSON) -> JSON:
    """OpenAI function ``parameters``: no ``default`` at any depth, no ``$schema``, object root."""
    result = copy.deepcopy(schema) if schema else {}

    def strip_default(node: JSON) -> None:
        node.pop("default", None)

    _walk(result, strip_default, _every_child)
    return _object_root(result)


def anthropic_input_schema(schema: JSON) -> JSON:
    """Anthropic ``input_schema``: an object root without ``anyOf``/``oneOf``/``allOf``.

    A root union is folded into one object: every variant's properties are offered, and only
    what all variants require stays required (``allOf`` requires the union of them).
    """
    result = _object_root(copy.deepcopy(schema) if schema else {})
    for key in _COMBINATORS:
        variants = [v for v in result.pop(key, None) or [] if isinstance(v, dict)]
        if variants:
            _fold_variants(result, variants, every=key == "allOf")
    result["type"] = "object"
    if not isinstance(result.get("properties"), dict):
        result["properties"] = {}
    return result


def _fold_variants(root: JSON, variants: list[JSON], *, every: bool) -> None:
    properties: JSON = dict(root.get("properties") or {})
    required_sets: list[set[str]] = []
    for variant in variants:
        properties.update(variant.get("properties") or {})
        required_sets.append(set(variant.get("required") or ()))
    root["properties"] = properties
    common = set.union(*required_sets) if every else set.intersection(*required_sets)
    required = list(dict.fromkeys([*(root.get("required") or ()), *sorted(common)]))
    if required:
        root["required"] = required


# What Ollama's server keeps of a property; everything else is explained in the description.
_OLLAMA_KEEPS = frozenset({"type", "items", "description", "enum", "properties", "required"})


def ollama_parameters(schema: JSON) -> JSON:
    """Ollama function ``parameters``: references inlined, unsupported keywords described."""
    result = _object_root(_dereference(copy.deepcopy(schema) if schema else {}))
    for child in (result.get("properties") or {}).values():
        _walk(child, _describe_dropped)
    result.pop("default", None)
    return result


def _dereference(schema: JSON) -> JSON:
    definitions: JSON = {**schema.pop("definitions", {}), **schema.pop("$defs", {})}

    def resolve(node: Any, seen: frozenset[str]) -> Any:
        if isinstance(node, list):
            return [resolve(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            name = ref.rsplit("/", 1)[-1]
            if name in seen or name not in definitions:  # recursive or foreign: describe it
                return {"type": "object", "description": f"(a {name} object)"}
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return resolve({**definitions[name], **rest}, seen | {name})
        return {key: resolve(value, seen) for key, value in node.items()}

    resolved: JSON = resolve(schema, frozenset())
    return resolved


def _describe_dropped(node: JSON) -> None:
    notes: list[str] = []
    for key in _COMBINATORS:
        variants = node.pop(key, None)
        if isinstance(variants, list):
            types = [v.get("type") for v in variants if isinstance(v, dict)]
            simple = [t for t in types if isinstance(t, str)]
            if simple and "type" not in node:
                node["type"] = simple if len(simple) > 1 else simple[0]
            if len(simple) != len(types) or key == "allOf":
                notes.append(f"{key}: {json.dumps(variants, separators=(',', ':'))}")
    for key in sorted(set(node) - _OLLAMA_KEEPS):
        value = node.pop(key)
        notes.append(f"{key}: {json.dumps(value, separators=(',', ':'))}")
    if notes:
        description = node.get("description")
        note = "; ".join(notes)
        node["description"] = f"{description} ({note})" if description else f"({note})"
