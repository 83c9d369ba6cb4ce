"""Schema drift: fields a record has that its stream's schema does not declare, and what becomes of them.

Airbyte's S3 destination 1.0 drops the undeclared fields of objects with a
schema, and does not note it in ``_airbyte_meta`` (the seed rules that). The
converter (:class:`~framework.typed.converter.RecordConverter`) counts them
(:class:`Drift`) whatever the policy, and a stream's policy says what is landed:

``drop``
    the seed's output, unchanged: the fields are left out (and now counted);
``keep``
    one more nullable string column, :data:`ADDITIONAL_PROPERTIES`, with the
    record's undeclared fields as a JSON object text (null when it has none);
    a nested field is keyed by where it sat (``address.zip``, ``items[0].sku``);
``evolve``
    each undeclared top-level field becomes a typed column, its type inferred
    from the values (:func:`kind_of`, :func:`merge_kinds`): ``boolean``,
    ``integer``, ``number`` or ``string`` (objects and arrays as JSON text);
    integers and numbers together give ``number``, any other mix ``string``,
    so a value never has to be nulled. Undeclared nested fields, and fields
    whose names start with ``_airbyte_`` (Airbyte's own columns), are dropped
    (counted); ``keep`` keeps those too.

Pure and cheap: a page whose records have only declared keys costs one
``set.issuperset`` per record.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, get_args

import framework.typed.types as t

Policy = Literal["drop", "keep", "evolve"]
POLICIES: tuple[str, ...] = get_args(Policy)
DEFAULT_POLICY: Policy = "drop"

#: The column ``keep`` adds: Airbyte's name for it before 1.0.
ADDITIONAL_PROPERTIES = "_airbyte_additional_properties"

Kind = Literal["boolean", "integer", "number", "string"]
KINDS: tuple[str, ...] = get_args(Kind)

_INT64_MIN, _INT64_MAX = -(2 ** 63), 2 ** 63 - 1
_TYPES: dict[str, t.FieldType] = {"boolean": t.BOOLEAN, "integer": t.INTEGER, "number": t.NUMBER,
                                  "string": t.STRING}


def kind_of(value: Any) -> str | None:
    """The inferred kind of one JSON value (None for null): an integer beyond 64 bits is ``string``, so that
    no digit is lost; objects and arrays are ``string`` (their JSON text)."""
    kind = value.__class__
    if value is None:
        return None
    if kind is bool:
        return "boolean"
    if kind is int:
        return "integer" if _INT64_MIN <= value <= _INT64_MAX else "string"
    if kind is float:
        return "number"
    return "string"


def merge_kinds(first: str | None, second: str | None) -> str | None:
    """One kind for values of two: the same kind stays, ``integer`` and ``number`` give ``number``, any other
    pair ``string`` (which takes every value, as JSON text where it is not a string)."""
    if first is None or first == second:
        return second if first is None else first
    if second is None:
        return first
    if {first, second} == {"integer", "number"}:
        return "number"
    return "string"


def infer_kind(values: Sequence[Any], start: str | None = None) -> str | None:
    """The kind of ``values`` (None when every value is null), merged into ``start``."""
    kind = start
    classes = set(map(type, values))
    classes.discard(type(None))
    if not classes:
        return kind
    if classes == {int}:  # the common case, in C; a value beyond 64 bits makes it string
        sample = [v for v in values if v is not None]
        if min(sample) < _INT64_MIN or max(sample) > _INT64_MAX:
            return merge_kinds(kind, "string")
        return merge_kinds(kind, "integer")
    for python_type in classes:
        if python_type is int:
            found = "integer"
        elif python_type is bool:
            found = "boolean"
        elif python_type is float:
            found = "number"
        else:
            found = "string"
        kind = merge_kinds(kind, found)
    if kind == "integer":  # ints among others: check their range as above
        sample = [v for v in values if v.__class__ is int]
        if min(sample) < _INT64_MIN or max(sample) > _INT64_MAX:
            return "string"
    return kind


def field_type(kind: str) -> t.FieldType:
    """The field type a column of ``kind`` is typed with."""
    return _TYPES[kind]


def json_schema_of(kind: str) -> dict[str, Any]:
    """The JSON Schema of an evolved column of ``kind`` (nullable), for the landed catalog."""
    return {"type": ["null", kind]}


def check_policy(value: str, where: str) -> Policy:
    """``value`` as a policy; a ``ValueError`` naming ``where`` and the choices otherwise."""
    if value not in POLICIES:
        raise ValueError(f"{where}: schema drift policy {value!r} is not known; use one of {', '.join(POLICIES)}")
    return value  # type: ignore[return-value]


class Drift:
    """The undeclared fields of the records converted so far: ``fields`` maps a field's path (``priority``,
    ``address.zip``, ``items[].sku``) to how many values had it; ``records`` is how many records had one at
    least (any depth)."""

    __slots__ = ("fields", "records")

    def __init__(self, fields: Mapping[str, int] | None = None, records: int = 0) -> None:
        self.fields: dict[str, int] = dict(fields or {})
        self.records = records

    def add(self, other: Drift) -> None:
        fields = self.fields
        for path, count in other.fields.items():
            fields[path] = fields.get(path, 0) + count
        self.records += other.records

    def __bool__(self) -> bool:
        return self.records > 0

    def as_dict(self) -> dict[str, Any]:
        return {"records": self.records, "fields": dict(self.fields)}

    @classmethod
    def of(cls, data: Mapping[str, Any] | None) -> Drift:
        if not data:
            return cls()
        return cls({str(k): int(v) for k, v in (data.get("fields") or {}).items()}, int(data.get("records") or 0))


def merge_evolved(first: Iterable[tuple[str, str]], second: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """Evolved columns of two sources as one list: ``first``'s order, then ``second``'s new names in their order;
    a name in both gets :func:`merge_kinds` of the two."""
    merged: dict[str, str] = dict(first)
    for name, kind in second:
        merged[name] = merge_kinds(merged.get(name), kind) or kind
    return tuple(merged.items())


__all__ = ["ADDITIONAL_PROPERTIES", "DEFAULT_POLICY", "KINDS", "POLICIES", "Drift", "Kind", "Policy",
           "check_policy", "field_type", "infer_kind", "json_schema_of", "kind_of", "merge_evolved",
           "merge_kinds"]
