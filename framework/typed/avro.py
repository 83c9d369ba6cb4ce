"""The Avro schema of a stream's typed records, and typed batches as Avro records.

:func:`avro_schema` gives a dict that ``fastavro.parse_schema`` accepts: a
record with the envelope, then the data fields, each ``["null", T]`` with
``default: null``:

============================ ===================================================
field type                   Avro type
============================ ===================================================
envelope                     ``_airbyte_raw_id`` string (logicalType uuid),
                             ``_airbyte_extracted_at`` long (timestamp-millis),
                             ``_airbyte_generation_id`` long, ``_airbyte_meta``
                             record {sync_id long, changes array of record
                             {field, change, reason: string}}
string, boolean              string, boolean
integer, number              long, double
date                         int (logicalType date)
time with/without timezone   long (logicalType time-micros)
timestamp with/without tz    long (logicalType timestamp-micros)
object                       record (a unique name made of the field path)
array                        array with items ``["null", T]``
union                        ``["null", T1, T2, ...]``; when two members share an
                             Avro type (integer and timestamp are both long,
                             say), which Avro unions cannot hold, the union is
                             the Parquet form instead: a record ``{type,
                             integer, timestamp_with_timezone, ...}``
unknown                      string (JSON text)
============================ ===================================================

Names. Avro names are ``[A-Za-z_][A-Za-z0-9_]*``. A field name that is not
one is changed: accents are taken off letters (``é`` -> ``e``), every other
character that is not allowed becomes ``_``, and a name starting with a digit
(or empty) gets a leading ``_``; a name that clashes with another field of the
same record gets ``_2``, ``_3``... (valid names keep theirs first).
:attr:`AvroSchema.renamed` maps the path of every changed field (a tuple of
the original names from the top) to its Avro name. Record names are made the
same way from the field path (the stream name for the top record) and are
unique in the schema.

:func:`avro_records` turns a typed Arrow batch into dicts for fastavro: dates,
times and timestamps as integers, fields under their Avro names, union values
as fastavro's ``(branch name, value)`` tuples so the branch is never guessed.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

import framework.typed.arrow as a
import framework.typed.types as t

Fixer = Callable[[Any], Any]

_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_]")
_VALID_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string",
               "record", "enum", "array", "map", "fixed", "union"}

_SCALARS: dict[type, Any] = {
    t.String: "string", t.Boolean: "boolean", t.Integer: "long", t.Number: "double",
    t.Date: {"type": "int", "logicalType": "date"},
    t.TimeWithTz: {"type": "long", "logicalType": "time-micros"},
    t.TimeWithoutTz: {"type": "long", "logicalType": "time-micros"},
    t.TimestampWithTz: {"type": "long", "logicalType": "timestamp-micros"},
    t.TimestampWithoutTz: {"type": "long", "logicalType": "timestamp-micros"},
    t.Unknown: "string",
}


def avro_name(text: str) -> str:
    """``text`` as a valid Avro name (see the module docstring)."""
    if _VALID_NAME.fullmatch(text):
        return text
    plain = "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))
    name = _NOT_IN_NAME.sub("_", plain)
    return "_" + name if not name or name[0].isdigit() else name


def _unique_names(names: list[str], taken: set[str]) -> list[str]:
    """Avro names for ``names`` (in order), none in ``taken`` nor twice; valid names are served first."""
    out: list[str | None] = [None] * len(names)
    for index, name in enumerate(names):
        if _VALID_NAME.fullmatch(name) and name not in taken:
            out[index] = name
            taken.add(name)
    for index, name in enumerate(names):
        if out[index] is None:
            base = avro_name(name)
            candidate, suffix = base, 2
            while candidate in taken:
                candidate, suffix = f"{base}_{suffix}", suffix + 1
            out[index] = candidate
            taken.add(candidate)
    return out  # type: ignore[return-value]


@dataclass(frozen=True)
class AvroSchema:
    """An Avro schema (``schema``, for fastavro) and the field names it had to change (``renamed``)."""

    schema: dict
    renamed: Mapping[tuple[str, ...], str]
    #: (Arrow column, Avro field, conversion of a non-null value or None), envelope first.
    columns: tuple[tuple[str, str, Fixer | None], ...] = field(repr=False, compare=False)
    #: The Arrow schema with dates, times and timestamps as integers (what ``to_pylist`` should see).
    storage_schema: pa.Schema = field(repr=False, compare=False)


def avro_schema(record_type: t.FieldType, stream: str) -> dict:
    """The Avro schema (a dict) of the typed records of a stream."""
    return build_avro_schema(record_type, stream).schema


def build_avro_schema(record_type: t.FieldType, stream: str) -> AvroSchema:
    """The Avro schema of a stream's typed records, the names it changed and how to convert batches."""
    builder = _Builder()
    meta = {"type": "record", "name": builder.record_name(["airbyte_meta"]), "fields": [
        {"name": "sync_id", "type": "long"},
        {"name": "changes", "type": {"type": "array", "items": {
            "type": "record", "name": builder.record_name(["airbyte_change"]), "fields": [
                {"name": "field", "type": "string"},
                {"name": "change", "type": "string"},
                {"name": "reason", "type": "string"}]}}}]}
    envelope = [
        {"name": a.RAW_ID, "type": {"type": "string", "logicalType": "uuid"}},
        {"name": a.EXTRACTED_AT, "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": a.GENERATION_ID, "type": "long"},
        {"name": a.META, "type": meta},
    ]
    root_name = builder.record_name([stream])
    fields = a.data_fields(record_type, stream)
    names = _unique_names([name for name, _ in fields], set(a.ENVELOPE_NAMES))
    columns: list[tuple[str, str, Fixer | None]] = [(name, name, None) for name in a.ENVELOPE_NAMES]
    data = []
    for (name, kind), avro in zip(fields, names):
        if avro != name:
            builder.renamed[(name,)] = avro
        avro_type, fixer = builder.type_of(kind, (name,))
        data.append({"name": avro, "type": _nullable(avro_type), "default": None})
        columns.append((name, avro, fixer))
    schema = {"type": "record", "name": root_name, "fields": envelope + data}
    storage = pa.schema([pa.field(f.name, _storage_type(f.type), f.nullable)
                         for f in a.arrow_schema(record_type, stream)])
    return AvroSchema(schema, dict(builder.renamed), tuple(columns), storage)


def avro_records(batch: pa.RecordBatch, avro: AvroSchema) -> list[dict]:
    """The records of a typed batch as dicts for fastavro, with ``avro.schema``.

    Columns are found by name; a batch that went through Parquet or Spark
    (list items named ``element``, other nullability) is read the same way.
    """
    columns = []
    storage = avro.storage_schema
    for arrow_name, _, fixer in avro.columns:
        column = batch.column(arrow_name)
        storage_type = storage.field(arrow_name).type
        if column.type != storage_type:
            column = column.cast(storage_type)
        values = column.to_pylist()
        if fixer is not None:
            values = [None if value is None else fixer(value) for value in values]
        columns.append(values)
    names = [avro_field for _, avro_field, _ in avro.columns]
    return [dict(zip(names, row)) for row in zip(*columns)]


def _nullable(avro_type: Any) -> list:
    return ["null", *avro_type] if isinstance(avro_type, list) else ["null", avro_type]


def _storage_type(arrow_type: pa.DataType) -> pa.DataType:
    """``arrow_type`` with dates, times and timestamps replaced by the integers that hold them."""
    if pa.types.is_timestamp(arrow_type) or pa.types.is_time64(arrow_type):
        return pa.int64()
    if pa.types.is_date32(arrow_type):
        return pa.int32()
    if pa.types.is_struct(arrow_type):
        return pa.struct([pa.field(f.name, _storage_type(f.type), f.nullable) for f in arrow_type])
    if pa.types.is_list(arrow_type):
        item = arrow_type.value_field
        return pa.list_(pa.field(item.name, _storage_type(item.type), item.nullable))
    return arrow_type


class _Builder:
    """Builds Avro types, keeping record names unique and noting renamed fields."""

    def __init__(self) -> None:
        self.records: set[str] = set(_PRIMITIVES)
        self.renamed: dict[tuple[str, ...], str] = {}

    def record_name(self, parts: list[str]) -> str:
        return _unique_names(["_".join(parts) or "record"], self.records)[0]

    def type_of(self, kind: t.FieldType, path: tuple[str, ...]) -> tuple[Any, Fixer | None]:
        """The Avro type of ``kind`` at ``path`` and the conversion its Arrow values need (None: none)."""
        scalar = _SCALARS.get(type(kind))
        if scalar is not None:
            return (dict(scalar) if isinstance(scalar, dict) else scalar), None
        if isinstance(kind, t.Object):
            return self._record(kind, path)
        if isinstance(kind, t.Array):
            items, fix_item = self.type_of(kind.items, path + ("item",))
            array = {"type": "array", "items": _nullable(items)}
            if fix_item is None:
                return array, None
            return array, lambda values: [None if value is None else fix_item(value) for value in values]
        if isinstance(kind, t.Union):
            return self._union(kind, path)
        raise TypeError(f"no Avro type for {kind!r}")

    def _record(self, kind: t.Object, path: tuple[str, ...]) -> tuple[dict, Fixer | None]:
        record_name = self.record_name(list(path))
        names = _unique_names([name for name, _ in kind.properties], set())
        fields, plan, fixes = [], [], False
        for (name, child), avro in zip(kind.properties, names):
            if avro != name:
                self.renamed[path + (name,)] = avro
                fixes = True
            child_type, child_fix = self.type_of(child, path + (name,))
            fixes = fixes or child_fix is not None
            fields.append({"name": avro, "type": _nullable(child_type), "default": None})
            plan.append((name, avro, child_fix))
        record = {"type": "record", "name": record_name, "fields": fields}
        if not fixes:
            return record, None

        def fix(value: dict) -> dict:
            out = {}
            for name, avro, child_fix in plan:
                item = value.get(name)
                out[avro] = item if child_fix is None or item is None else child_fix(item)
            return out

        return record, fix

    def _union(self, kind: t.Union, path: tuple[str, ...]) -> tuple[Any, Fixer | None]:
        members = [self.type_of(option, path) for option in kind.options]
        shapes = [_shape(avro_type) for avro_type, _ in members]
        if len(set(shapes)) == len(shapes):
            branches = {option.name: (shape, fix) for option, shape, (_, fix) in zip(kind.options, shapes, members)}

            def as_branch(value: dict) -> Any:
                member = value["type"]
                shape, fix = branches[member]
                item = value[member]
                if item is None:
                    return None
                return shape, (item if fix is None else fix(item))

            return [avro_type for avro_type, _ in members], as_branch
        fields = [{"name": "type", "type": ["null", "string"], "default": None}]
        fields += [{"name": option.name, "type": _nullable(avro_type), "default": None}
                   for option, (avro_type, _) in zip(kind.options, members)]
        record = {"type": "record", "name": self.record_name(list(path) + ["union"]), "fields": fields}
        fixes = [(option.name, fix) for option, (_, fix) in zip(kind.options, members) if fix is not None]
        if not fixes:
            return record, None

        def fix_members(value: dict) -> dict:
            out = dict(value)
            for name, fix in fixes:
                if out.get(name) is not None:
                    out[name] = fix(out[name])
            return out

        return record, fix_members


def _shape(avro_type: Any) -> str:
    """What tells an Avro union's branches apart, and fastavro's name for the branch."""
    if isinstance(avro_type, str):
        return avro_type
    if avro_type["type"] == "record":
        return avro_type["name"]
    return avro_type["type"]
