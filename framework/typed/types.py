"""A stream's JSON Schema as a small tree of field types: :func:`parse_schema`.

The tree has the types of Airbyte's S3 destination (1.0 and later):

============================== =====================================================
JSON Schema                    field type
============================== =====================================================
``string``                     :class:`String`
``string``, ``format: date``   :class:`Date`
``string``, ``format: time``   :class:`TimeWithTz`; :class:`TimeWithoutTz` when
                               ``airbyte_type`` is ``time_without_timezone``
``string``, ``format:          :class:`TimestampWithTz`; :class:`TimestampWithoutTz`
date-time``                    when ``airbyte_type`` is ``timestamp_without_timezone``
``boolean``                    :class:`Boolean`
``integer``; ``number`` with   :class:`Integer`
``airbyte_type: integer``
``number``                     :class:`Number`
``object`` with properties     :class:`Object` (properties in schema order)
``array`` with ``items``       :class:`Array`; a list of item schemas (tuple form)
                               gives an array of their union
``oneOf``/``anyOf``; a list    :class:`Union` of the options
of several types
anything else                  :class:`Unknown`, written as JSON text: objects
                               without properties (missing, ``null`` or ``{}``),
                               arrays without ``items``, ``{}``, no ``type``
============================== =====================================================

``"null"`` in a list of types only makes the field nullable (every field is).
Airbyte's well-known type references (``WellKnownTypes.json#/definitions/Date``
and so on) are understood too; other unresolved ``$ref`` give :class:`Unknown`.

Unions are simplified as the seed says: like options merge and a union left
with one option becomes that option. Objects merge their properties (in order
of first appearance); a property both give must agree, or be objects (merged
in turn) or arrays (whose items are merged in turn); otherwise
:class:`~framework.typed.errors.SchemaConflictError` names the stream,
the field and both types. A schemaless option absorbs a typed one of the same
JSON type (an object without properties and one with them give an object
without properties: every value stays, as JSON text), and an option that
accepts anything (``{}``) makes the whole union :class:`Unknown`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from framework.typed.errors import SchemaConflictError


class FieldType:
    """Base of the field types; ``name`` is the member name of a union (the seed's table)."""

    name: str = ""

    def describe(self) -> str:
        """A short text for error messages (``integer``, ``array of string``...)."""
        return self.name


@dataclass(frozen=True)
class String(FieldType):
    name = "string"


@dataclass(frozen=True)
class Boolean(FieldType):
    name = "boolean"


@dataclass(frozen=True)
class Integer(FieldType):
    name = "integer"


@dataclass(frozen=True)
class Number(FieldType):
    name = "number"


@dataclass(frozen=True)
class Date(FieldType):
    name = "date"


@dataclass(frozen=True)
class TimeWithTz(FieldType):
    name = "time_with_timezone"


@dataclass(frozen=True)
class TimeWithoutTz(FieldType):
    name = "time_without_timezone"


@dataclass(frozen=True)
class TimestampWithTz(FieldType):
    name = "timestamp_with_timezone"


@dataclass(frozen=True)
class TimestampWithoutTz(FieldType):
    name = "timestamp_without_timezone"


@dataclass(frozen=True)
class Object(FieldType):
    """An object with a schema: ``properties`` as ``(name, type)`` pairs in schema order (never empty)."""

    properties: tuple[tuple[str, FieldType], ...]
    name = "object"

    def describe(self) -> str:
        return "object {" + ", ".join(name for name, _ in self.properties) + "}"


@dataclass(frozen=True)
class Array(FieldType):
    """An array whose items have one type (a :class:`Union` for mixed items)."""

    items: FieldType
    name = "array"

    def describe(self) -> str:
        return f"array of {self.items.describe()}"


@dataclass(frozen=True)
class Union(FieldType):
    """Values of one of several types; at least two ``options``, no two with the same ``name``."""

    options: tuple[FieldType, ...]
    name = "union"

    def describe(self) -> str:
        return "union of " + " | ".join(option.describe() for option in self.options)

    def __eq__(self, other: object) -> bool:  # the order of the options does not matter
        return isinstance(other, Union) and set(self.options) == set(other.options)

    def __hash__(self) -> int:
        return hash(frozenset(self.options))


@dataclass(frozen=True)
class Unknown(FieldType):
    """A value without a usable schema, written as JSON text.

    ``kind`` says which JSON values fit: ``"object"`` (an object without
    properties), ``"array"`` (an array without items) or ``"any"``.
    """

    kind: str = "any"

    @property
    def name(self) -> str:  # type: ignore[override]
        return "unknown" if self.kind == "any" else self.kind

    def describe(self) -> str:
        return "any JSON value" if self.kind == "any" else f"{self.kind} without a schema"


STRING, BOOLEAN, INTEGER, NUMBER = String(), Boolean(), Integer(), Number()
DATE, TIME_WITH_TZ, TIME_WITHOUT_TZ = Date(), TimeWithTz(), TimeWithoutTz()
TIMESTAMP_WITH_TZ, TIMESTAMP_WITHOUT_TZ = TimestampWithTz(), TimestampWithoutTz()
UNKNOWN, UNKNOWN_OBJECT, UNKNOWN_ARRAY = Unknown("any"), Unknown("object"), Unknown("array")

_WELL_KNOWN: dict[str, FieldType] = {
    "String": STRING, "BinaryData": STRING, "Boolean": BOOLEAN, "Integer": INTEGER, "Number": NUMBER,
    "Date": DATE, "TimeWithTimezone": TIME_WITH_TZ, "TimeWithoutTimezone": TIME_WITHOUT_TZ,
    "TimestampWithTimezone": TIMESTAMP_WITH_TZ, "TimestampWithoutTimezone": TIMESTAMP_WITHOUT_TZ,
}


def parse_schema(schema: Any, *, stream: str) -> FieldType:
    """The field type of a stream's records (an :class:`Object` when the schema has properties).

    Raises :class:`SchemaConflictError` when a union cannot be merged.
    """
    return _Parser(stream).field(schema, "")


class _Parser:
    """Walks a JSON Schema; ``path`` (for error messages) is the field path so far."""

    def __init__(self, stream: str):
        self.stream = stream

    def field(self, node: Any, path: str) -> FieldType:
        parsed = self.node(node, path)
        return UNKNOWN if parsed is None else parsed

    def node(self, node: Any, path: str) -> FieldType | None:
        """The type of ``node``; None when it allows only ``null``."""
        if not isinstance(node, Mapping):
            return UNKNOWN  # `true`, `false` or garbage: nothing to go by
        options = node.get("oneOf") or node.get("anyOf")
        if isinstance(options, list):
            return self.union([self.node(option, path) for option in options], path)
        declared = node.get("type")
        if isinstance(declared, str):
            names = [declared]
        elif isinstance(declared, list):
            names = [name for name in declared if isinstance(name, str)]
        elif "properties" in node:
            names = ["object"]
        elif "items" in node:
            names = ["array"]
        else:
            reference = node.get("$ref")
            if isinstance(reference, str) and reference.startswith("WellKnownTypes.json#/definitions/"):
                return _WELL_KNOWN.get(reference.rsplit("/", 1)[1], UNKNOWN)
            return UNKNOWN
        names = [name for name in names if name != "null"]
        if not names:
            return None if declared is not None else UNKNOWN
        return self.union([self.single(name, node, path) for name in names], path)

    def single(self, name: str, node: Mapping, path: str) -> FieldType:
        airbyte_type = node.get("airbyte_type")
        if name == "string":
            fmt = node.get("format")
            if fmt == "date":
                return DATE
            if fmt == "time":
                return TIME_WITHOUT_TZ if airbyte_type == "time_without_timezone" else TIME_WITH_TZ
            if fmt == "date-time":
                return TIMESTAMP_WITHOUT_TZ if airbyte_type == "timestamp_without_timezone" else TIMESTAMP_WITH_TZ
            return STRING
        if name == "integer":
            return INTEGER
        if name == "number":
            return INTEGER if airbyte_type == "integer" else NUMBER
        if name == "boolean":
            return BOOLEAN
        if name == "object":
            properties = node.get("properties")
            if not isinstance(properties, Mapping) or not properties:
                return UNKNOWN_OBJECT
            prefix = path + "." if path else ""
            return Object(tuple((str(key), self.field(value, prefix + str(key)))
                                for key, value in properties.items()))
        if name == "array":
            items = node.get("items")
            if isinstance(items, Mapping):
                return Array(self.field(items, path + "[]"))
            if isinstance(items, list) and items:
                merged = self.union([self.node(item, path + "[]") for item in items], path + "[]")
                return Array(UNKNOWN if merged is None else merged)
            return UNKNOWN_ARRAY
        return UNKNOWN

    # ------------------------------------------------------------------ unions

    def union(self, options: list[FieldType | None], path: str) -> FieldType | None:
        flat: list[FieldType] = []
        for option in options:
            if isinstance(option, Union):
                flat.extend(option.options)
            elif option is not None:
                flat.append(option)
        if not flat:
            return None
        if UNKNOWN in flat:
            return UNKNOWN
        merged: list[FieldType] = []
        for option in flat:
            for index, kept in enumerate(merged):
                if kept.name == option.name:
                    merged[index] = self.merge(kept, option, path)
                    break
            else:
                merged.append(option)
        return merged[0] if len(merged) == 1 else Union(tuple(merged))

    def merge(self, first: FieldType, second: FieldType, path: str) -> FieldType:
        """One type for two that a value at ``path`` may have (same JSON kind, or a conflict)."""
        if first == second:
            return first
        if isinstance(first, Unknown) and first.kind == second.name:
            return first
        if isinstance(second, Unknown) and second.kind == first.name:
            return second
        if isinstance(first, Object) and isinstance(second, Object):
            properties = dict(first.properties)
            prefix = path + "." if path else ""
            for key, kind in second.properties:
                properties[key] = self.merge(properties[key], kind, prefix + key) if key in properties else kind
            return Object(tuple(properties.items()))
        if isinstance(first, Array) and isinstance(second, Array):
            return Array(self.merge(first.items, second.items, path + "[]"))
        raise SchemaConflictError(stream=self.stream, field=path or "(the record)",
                                  first=first.describe(), second=second.describe())
