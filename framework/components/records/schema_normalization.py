"""``schema_normalization: Default``: casting record values to the types of the stream's schema.

The schema is compiled once into a plan: for each property whose schema
declares a ``type`` (or nested ``properties``/``items``), a function that
returns the value unchanged when its JSON type is already allowed and
otherwise tries a lossless conversion, in the order the schema lists types:

=========== ================================================================
to          from
=========== ================================================================
integer     text of an integer written canonically (``"12"``, not ``"012"``);
            a float with no fractional part (``3.0``)
number      text of a JSON number whose value a float (or int) holds exactly
string      an integer, a float or a boolean (``true``/``false``)
boolean     ``"true"``/``"false"`` (any case); the integers 0 and 1
=========== ================================================================

Anything else (``"12abc"`` for an integer, an object for a string) is left as
it is, and so is ``null``. Objects and arrays are walked through
``properties`` and ``items``. Not handled: ``anyOf``/``oneOf``/``allOf``,
``additionalProperties``/``patternProperties``, tuple ``items``, and wrapping
a scalar into an array. Records are changed in place.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

Cast = Callable[[Any], Any]

_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
    "object": (dict,),
    "array": (list,),
}
_INTEGER_TEXT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_NUMBER_TEXT = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_FAILED: Any = object()


def _to_integer(value: Any) -> Any:
    if type(value) is str:
        return int(value) if _INTEGER_TEXT.fullmatch(value) else _FAILED
    if type(value) is float and value.is_integer():
        return int(value)
    return _FAILED


def _to_number(value: Any) -> Any:
    if type(value) is not str or not _NUMBER_TEXT.fullmatch(value):
        return _FAILED
    if _INTEGER_TEXT.fullmatch(value):
        return int(value)
    number = float(value)  # too large: inf, too small: 0.0; neither equals the text
    return number if Decimal(value) == Decimal(repr(number)) else _FAILED


def _to_string(value: Any) -> Any:
    kind = type(value)
    if kind is bool:
        return "true" if value else "false"
    if kind is int or kind is float:
        return repr(value)
    return _FAILED


def _to_boolean(value: Any) -> Any:
    if type(value) is str:
        lowered = value.lower()
        return True if lowered == "true" else False if lowered == "false" else _FAILED
    if type(value) is int and value in (0, 1):
        return bool(value)
    return _FAILED


_CONVERTERS: dict[str, Cast] = {
    "integer": _to_integer,
    "number": _to_number,
    "string": _to_string,
    "boolean": _to_boolean,
}


def _types(schema: Mapping[str, Any]) -> tuple[str, ...]:
    declared = schema.get("type")
    if isinstance(declared, str):
        return (declared,)
    if isinstance(declared, (list, tuple)):
        return tuple(t for t in declared if isinstance(t, str))
    return ()


def _object_plan(properties: Mapping[str, Any]) -> tuple[tuple[str, Cast], ...]:
    plan = []
    for key, subschema in properties.items():
        cast = compile_cast(subschema)
        if cast is not None:
            plan.append((key, cast))
    return tuple(plan)


def _apply_plan(record: dict, plan: tuple[tuple[str, Cast], ...]) -> None:
    for key, cast in plan:
        value = record.get(key)
        if value is not None:
            cast_value = cast(value)
            if cast_value is not value:
                record[key] = cast_value


def compile_cast(schema: Any) -> Cast | None:
    """A function casting a value to ``schema``; None when the schema asks for nothing."""
    if not isinstance(schema, Mapping):
        return None
    types = _types(schema)
    properties = schema.get("properties")
    items = schema.get("items")
    plan = _object_plan(properties) if isinstance(properties, Mapping) and (
        not types or "object" in types) else ()
    item_cast = compile_cast(items) if isinstance(items, Mapping) and (not types or "array" in types) else None
    allowed: set[type] = set()
    for name in types:
        allowed.update(_PYTHON_TYPES.get(name, ()))
    converters = tuple(_CONVERTERS[name] for name in types if name in _CONVERTERS)
    if not plan and item_cast is None and not converters:
        return None
    checks_type = bool(types)

    def cast(value: Any) -> Any:
        kind = type(value)
        if kind is dict:
            if plan:
                _apply_plan(value, plan)
            if not checks_type or dict in allowed:
                return value
        elif kind is list:
            if item_cast is not None:
                for index, item in enumerate(value):
                    if item is not None:
                        cast_item = item_cast(item)
                        if cast_item is not item:
                            value[index] = cast_item
            if not checks_type or list in allowed:
                return value
        elif not checks_type or kind in allowed:
            return value
        for convert in converters:
            converted = convert(value)
            if converted is not _FAILED:
                return converted
        return value

    return cast


def compile_normalizer(schema: Mapping[str, Any]) -> Callable[[dict], None] | None:
    """A function casting a record (in place) to a stream schema; None when nothing would change."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping):
        return None
    plan = _object_plan(properties)
    if not plan:
        return None

    def normalize(record: dict) -> None:
        _apply_plan(record, plan)

    return normalize


__all__ = ["compile_cast", "compile_normalizer"]
