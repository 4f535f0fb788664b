"""Checking a call's arguments against the tool's JSON Schema before anything is sent."""

from __future__ import annotations

from typing import Any

from jsonschema import exceptions as schema_errors
from jsonschema import validators


def argument_problems(schema: dict[str, Any], arguments: dict[str, Any]) -> list[str]:
    """Every way ``arguments`` break ``schema``; unknown top-level fields are always refused.

    Servers often omit ``additionalProperties: false``; a model that invents a field should still
    hear about it rather than have it silently dropped or passed on.
    """
    problems: list[str] = []
    properties = schema.get("properties")
    if isinstance(properties, dict):
        unknown = sorted(set(arguments) - set(properties))
        problems.extend(f"unknown argument `{name}`" for name in unknown)
    try:
        validator_class = validators.validator_for(schema)
        validator_class.check_schema(schema)
    except schema_errors.SchemaError as exc:
        return [*problems, f"the tool's schema is invalid: {exc.message}"]
    validator = validator_class(schema)
    for error in sorted(validator.iter_errors(arguments), key=lambda e: list(e.path)):
        where = "/".join(str(part) for part in error.path)
        problems.append(f"{where}: {error.message}" if where else error.message)
    return problems
