"""A quick yes-only check that a config fits its spec, so a run imports jsonschema only when needed.

jsonschema takes about 0.1 s to import (referencing, attrs, the bundled
meta-schemas), which is a large share of ``run-manifest --protocol``'s
start-up. Most connection specifications use a handful of draft 7 keywords
whose meaning is plain (``type``, ``properties``, ``required``, ``enum`` of
strings, ``pattern``, lengths and bounds, ``oneOf``...). :func:`surely_fits`
answers True only when the config certainly fits, judging those keywords
exactly as jsonschema does; on anything else (a keyword it does not judge,
``$ref``, another draft, a ``format`` that is checked, a value it cannot
compare exactly) it answers False and the caller asks jsonschema, which also
words every error. So a config is never accepted that jsonschema would
reject (``tests/engine/test_config_fit.py`` checks it against jsonschema).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# Draft 7 keywords that constrain a value and are judged here.
_JUDGED = frozenset({
    "type", "properties", "required", "additionalProperties", "enum", "const", "items", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "pattern", "minItems", "maxItems",
    "minProperties", "maxProperties", "oneOf", "anyOf", "allOf", "format",
})
# Draft 7 keywords that constrain a value and are not judged here: their presence means "ask jsonschema".
_NOT_JUDGED = frozenset({
    "$ref", "additionalItems", "contains", "dependencies", "if", "then", "else", "multipleOf", "not",
    "patternProperties", "propertyNames", "uniqueItems",
    # later drafts' keywords, in case a spec names no $schema but uses them
    "$defs", "dependentRequired", "dependentSchemas", "unevaluatedProperties", "unevaluatedItems", "prefixItems",
    "$dynamicRef", "$recursiveRef",
})
_DRAFT7 = {"http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-07/schema",
           "https://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema"}


class _Unsure(Exception):
    """The value's fit depends on something not judged here."""


def surely_fits(spec: Any, config: Any, *, formats: bool = True) -> bool:
    """True when ``config`` certainly fits the JSON schema ``spec`` (draft 7, as jsonschema judges it);
    False when it may not. ``formats``: whether ``format`` is asserted (then any ``format`` is left to
    jsonschema's format checker)."""
    if not isinstance(spec, Mapping):
        return False
    schema_uri = spec.get("$schema")
    if schema_uri is not None and schema_uri not in _DRAFT7:
        return False  # another draft: other meanings (draft 4's boolean exclusiveMinimum, say)
    try:
        return _fits(spec, config, formats)
    except (_Unsure, re.error, TypeError, ValueError, RecursionError):
        return False


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _has_type(value: Any, name: Any) -> bool:
    if name == "string":
        return isinstance(value, str)
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    if name == "number":
        return _is_number(value)
    if name == "integer":
        return _is_number(value) and (isinstance(value, int) or value.is_integer())
    raise _Unsure  # an unknown type name: jsonschema raises for it


def _fits(schema: Any, value: Any, formats: bool) -> bool:
    if schema is True or (isinstance(schema, dict) and not schema):
        return True
    if not isinstance(schema, dict):
        raise _Unsure  # `false`, or not a schema
    if not _NOT_JUDGED.isdisjoint(schema):
        raise _Unsure
    kind = schema.get("type")
    if kind is not None:
        names = kind if isinstance(kind, list) else [kind]
        if not any(_has_type(value, name) for name in names):
            return False
    if "enum" in schema:  # judged for strings only: numbers and booleans compare in jsonschema's own ways
        options = schema["enum"]
        if not isinstance(options, list) or not all(isinstance(option, str) for option in options):
            raise _Unsure
        if not (isinstance(value, str) and value in options):
            return False
    if "const" in schema:
        wanted = schema["const"]
        if not isinstance(wanted, str):
            raise _Unsure
        if not (isinstance(value, str) and value == wanted):
            return False
    if "format" in schema and formats and isinstance(value, str):
        raise _Unsure  # jsonschema's format checker decides
    if isinstance(value, str):
        if not _string_fits(schema, value):
            return False
    elif _is_number(value):
        if not _number_fits(schema, value):
            return False
    elif isinstance(value, dict):
        if not _object_fits(schema, value, formats):
            return False
    elif isinstance(value, list):
        if not _array_fits(schema, value, formats):
            return False
    for key in ("allOf", "anyOf", "oneOf"):
        if key in schema:
            options = schema[key]
            if not isinstance(options, list) or not options:
                raise _Unsure
            matched = sum(1 for option in options if _fits(option, value, formats))
            if (key == "allOf" and matched < len(options)) or (key == "anyOf" and matched == 0) or (
                    key == "oneOf" and matched != 1):
                return False
    return True


def _bound(schema: dict, key: str) -> Any:
    found = schema.get(key)
    if found is not None and not _is_number(found):
        raise _Unsure
    return found


def _string_fits(schema: dict, value: str) -> bool:
    low, high = _bound(schema, "minLength"), _bound(schema, "maxLength")
    if (low is not None and len(value) < low) or (high is not None and len(value) > high):
        return False
    pattern = schema.get("pattern")
    if pattern is not None:
        if not isinstance(pattern, str):
            raise _Unsure
        return re.search(pattern, value) is not None
    return True


def _number_fits(schema: dict, value: Any) -> bool:
    low, high = _bound(schema, "minimum"), _bound(schema, "maximum")
    above, below = _bound(schema, "exclusiveMinimum"), _bound(schema, "exclusiveMaximum")
    return not ((low is not None and value < low) or (high is not None and value > high)
                or (above is not None and value <= above) or (below is not None and value >= below))


def _object_fits(schema: dict, value: dict, formats: bool) -> bool:
    required = schema.get("required")
    if required is not None:
        if not isinstance(required, list):
            raise _Unsure
        if any(name not in value for name in required):
            return False
    low, high = _bound(schema, "minProperties"), _bound(schema, "maxProperties")
    if (low is not None and len(value) < low) or (high is not None and len(value) > high):
        return False
    properties = schema.get("properties")
    if properties is not None and not isinstance(properties, dict):
        raise _Unsure
    properties = properties or {}
    for name, sub in properties.items():
        if name in value and not _fits(sub, value[name], formats):
            return False
    extra = schema.get("additionalProperties")
    if extra is not None and extra is not True:
        for name, item in value.items():
            if name not in properties and (extra is False or not _fits(extra, item, formats)):
                return False
    return True


def _array_fits(schema: dict, value: list, formats: bool) -> bool:
    low, high = _bound(schema, "minItems"), _bound(schema, "maxItems")
    if (low is not None and len(value) < low) or (high is not None and len(value) > high):
        return False
    items = schema.get("items")
    if items is None:
        return True
    if isinstance(items, list):
        raise _Unsure  # tuple validation
    return all(_fits(items, item, formats) for item in value)


__all__ = ["surely_fits"]
