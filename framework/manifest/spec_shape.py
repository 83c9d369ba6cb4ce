"""Whether a connection specification plainly fits the JSON Schema draft 7 meta-schema, without jsonschema.

Importing jsonschema costs about as much as the rest of a manifest check, and
nearly every spec is fine. :func:`plainly_valid` looks at the shape of each
keyword the draft 7 meta-schema constrains (``type`` is a simple type or a
list of them, ``properties`` maps names to schemas, ``required`` lists
distinct strings, ...) and answers True only when every one fits. It never
reports an error: on False (something odd, or too deep to look at) the caller
runs jsonschema's meta-schema check, which finds and words the problem. So a
True here must mean that jsonschema finds nothing (``tests/manifest/test_spec_shape.py``
checks that against jsonschema, keyword by keyword and with generated schemas).
Keywords the meta-schema does not name are free, as they are for jsonschema.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["KEYWORDS", "plainly_valid"]

#: Deeper than this, the check gives up (jsonschema decides).
MAX_DEPTH = 64

_SIMPLE_TYPES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})


def _string(value: Any, depth: int) -> bool:
    return isinstance(value, str)


def _boolean(value: Any, depth: int) -> bool:
    return isinstance(value, bool)


def _number(value: Any, depth: int) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _positive_number(value: Any, depth: int) -> bool:
    return _number(value, depth) and value > 0


def _count(value: Any, depth: int) -> bool:  # a non-negative integer (a float like 2.0 is left to jsonschema)
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _array(value: Any, depth: int) -> bool:
    return isinstance(value, list)


def _anything(value: Any, depth: int) -> bool:
    return True


def _names(value: Any, depth: int) -> bool:  # the meta-schema's stringArray: distinct strings
    return isinstance(value, list) and all(isinstance(v, str) for v in value) and len(set(value)) == len(value)


def _type(value: Any, depth: int) -> bool:
    if isinstance(value, str):
        return value in _SIMPLE_TYPES
    return (isinstance(value, list) and bool(value) and all(isinstance(v, str) and v in _SIMPLE_TYPES for v in value)
            and len(set(value)) == len(value))


def _schema(value: Any, depth: int) -> bool:
    if isinstance(value, bool):
        return True
    if not isinstance(value, dict) or depth > MAX_DEPTH:
        return False
    for key, item in value.items():
        check = KEYWORDS.get(key)
        if check is not None and not check(item, depth + 1):
            return False
    return True


def _schemas(value: Any, depth: int) -> bool:  # the meta-schema's schemaArray: at least one schema
    return isinstance(value, list) and bool(value) and all(_schema(v, depth) for v in value)


def _schema_map(value: Any, depth: int) -> bool:
    return isinstance(value, dict) and all(_schema(v, depth) for v in value.values())


def _items(value: Any, depth: int) -> bool:
    return _schemas(value, depth) if isinstance(value, list) else _schema(value, depth)


def _dependencies(value: Any, depth: int) -> bool:
    return isinstance(value, dict) and all(_names(v, depth) if isinstance(v, list) else _schema(v, depth)
                                           for v in value.values())


#: Every keyword of the draft 7 meta-schema, with the shape its value must have.
KEYWORDS: dict[str, Callable[[Any, int], bool]] = {
    "$id": _string, "$schema": _string, "$ref": _string, "$comment": _string, "title": _string,
    "description": _string, "pattern": _string, "format": _string, "contentMediaType": _string,
    "contentEncoding": _string,
    "default": _anything, "const": _anything, "examples": _array, "enum": _array,
    "readOnly": _boolean, "uniqueItems": _boolean,
    "multipleOf": _positive_number, "maximum": _number, "exclusiveMaximum": _number, "minimum": _number,
    "exclusiveMinimum": _number,
    "maxLength": _count, "minLength": _count, "maxItems": _count, "minItems": _count, "maxProperties": _count,
    "minProperties": _count,
    "required": _names, "type": _type,
    "additionalItems": _schema, "contains": _schema, "additionalProperties": _schema, "propertyNames": _schema,
    "if": _schema, "then": _schema, "else": _schema, "not": _schema,
    "items": _items, "allOf": _schemas, "anyOf": _schemas, "oneOf": _schemas,
    "definitions": _schema_map, "properties": _schema_map, "patternProperties": _schema_map,
    "dependencies": _dependencies,
}


def plainly_valid(schema: Any) -> bool:
    """True when ``schema`` surely passes the draft 7 meta-schema; False: ask jsonschema."""
    return _schema(schema, 0)
