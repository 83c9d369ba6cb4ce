"""``schema_normalization: Default``: casting record values to the types of the stream's schema, as Airbyte does.

Airbyte's ``Default`` (its ``TypeTransformer`` with default normalization)
walks the schema's ``properties`` and ``items``, and casts every value present
whose schema names one type (``null`` aside) with Python's own conversions:

=========== ================================================================
to          what happens
=========== ================================================================
string      ``str(value)``: ``12`` -> ``"12"``, ``True`` -> ``"True"``, an
            object -> its Python repr, ``null`` -> ``"None"`` (unless the
            type also allows ``null``)
number      ``float(value)``: ``3`` -> ``3.0``, ``"1e3"`` -> ``1000.0``
integer     ``int(value)``: ``"12"`` -> ``12``, ``3.7`` -> ``3`` (truncated)
boolean     text: ``y``/``yes``/``t``/``true``/``on``/``1`` (any case, spaces
            around) -> true, ``n``/``no``/``f``/``false``/``off``/``0`` ->
            false; anything else: Python truthiness (``0`` -> false, ``null``
            -> false unless ``null`` is allowed)
array       a scalar is wrapped in a list when the ``items`` type is absent or a
            list of scalar types
=========== ================================================================

A conversion that fails (``"abc"`` to a number) leaves the value as it is;
``null`` stays ``null`` where the type allows it. A schema listing several
types (``["string", "integer"]``) converts nothing, and neither does one
without ``type``. Objects and arrays are walked after their own conversion,
through ``properties`` (only the keys the record has) and a single ``items``
schema. Not walked: ``anyOf``/``oneOf``/``allOf``,
``additionalProperties``/``patternProperties`` and tuple ``items``. Records are
changed in place. The schema is compiled once into a plan, so a record costs
one step per property the schema can change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Cast = Callable[[Any], Any]

_SIMPLE_TYPES = frozenset({"string", "number", "integer", "boolean", "null"})
_SIMPLE_PYTHON = (str, float, int, bool, type(None))
_TRUE_TEXTS = frozenset({"y", "yes", "t", "true", "on", "1"})
_FALSE_TEXTS = frozenset({"n", "no", "f", "false", "off", "0"})


def _to_string(value: Any) -> Any:
    return value if type(value) is str else str(value)


def _to_number(value: Any) -> Any:
    if type(value) is float:
        return value
    try:
        return float(value)
    except (ValueError, TypeError, OverflowError):
        return value


def _to_integer(value: Any) -> Any:
    if type(value) is int:
        return value
    try:
        return int(value)
    except (ValueError, TypeError, OverflowError):
        return value


def _to_boolean(value: Any) -> Any:
    if type(value) is str:
        text = value.lower().strip()
        if text in _TRUE_TEXTS:
            return True
        if text in _FALSE_TEXTS:
            return False
        return value
    try:
        return bool(value)
    except (ValueError, TypeError):
        return value


_CONVERTERS: dict[str, Cast] = {
    "string": _to_string,
    "number": _to_number,
    "integer": _to_integer,
    "boolean": _to_boolean,
}


def _wraps_scalars(schema: Mapping[str, Any]) -> bool:
    """Whether an ``array`` schema wraps a scalar into a list: ``items`` absent or listing only scalar types."""
    items = schema.get("items", {})
    if not isinstance(items, Mapping):
        return False
    declared = items.get("type", ())
    if isinstance(declared, str):  # Airbyte takes the set of its characters: never a subset of type names
        return False
    try:
        return set(declared) <= _SIMPLE_TYPES
    except TypeError:
        return False


def _conversion(schema: Mapping[str, Any]) -> tuple[Cast | None, bool]:
    """The cast of a value by the schema's own ``type``, and whether ``null`` is kept as it is."""
    declared = schema.get("type", [])
    keeps_null = isinstance(declared, (str, list)) and "null" in declared
    if isinstance(declared, list):
        named = [kind for kind in declared if kind != "null"]
        if len(named) != 1:
            return None, keeps_null
        declared = named[0]
    if not isinstance(declared, str):
        return None, keeps_null
    if declared == "array":
        if not _wraps_scalars(schema):
            return None, keeps_null
        return _wrap, keeps_null
    return _CONVERTERS.get(declared), keeps_null


def _wrap(value: Any) -> Any:
    return [value] if type(value) in _SIMPLE_PYTHON else value


def _object_plan(properties: Mapping[str, Any]) -> tuple[tuple[str, Cast], ...]:
    plan = []
    for key, subschema in properties.items():
        cast = compile_cast(subschema)
        if cast is not None:
            plan.append((key, cast))
    return tuple(plan)


def _apply_plan(record: dict, plan: tuple[tuple[str, Cast], ...]) -> None:
    for key, cast in plan:
        if key in record:
            value = record[key]
            cast_value = cast(value)
            if cast_value is not value:
                record[key] = cast_value


def compile_cast(schema: Any) -> Cast | None:
    """A function casting a value to ``schema`` (objects and lists changed in place); None when it changes nothing."""
    if not isinstance(schema, Mapping):
        return None
    convert, keeps_null = _conversion(schema)
    properties = schema.get("properties")
    plan = _object_plan(properties) if isinstance(properties, Mapping) else ()
    items = schema.get("items")
    item_cast = compile_cast(items) if isinstance(items, Mapping) else None
    if convert is None and not plan and item_cast is None:
        return None

    def cast(value: Any) -> Any:
        if convert is not None and not (value is None and keeps_null):
            value = convert(value)
        kind = type(value)
        if kind is dict:
            if plan:
                _apply_plan(value, plan)
        elif kind is list and item_cast is not None:
            for index, item in enumerate(value):
                cast_item = item_cast(item)
                if cast_item is not item:
                    value[index] = cast_item
        return value

    return cast


def compile_normalizer(schema: Mapping[str, Any]) -> Callable[[dict], None] | None:
    """A function casting a record (in place) to a stream schema; None when nothing would change."""
    if not isinstance(schema, Mapping) or not schema:
        return None
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return None
    plan = _object_plan(properties)
    if not plan:
        return None

    def normalize(record: dict) -> None:
        _apply_plan(record, plan)

    return normalize


__all__ = ["compile_cast", "compile_normalizer"]
