"""Avro files back as Arrow: the types of their schemas and their records as batches (read with fastavro).

What :mod:`framework.spark.avro_source` hands Spark, which has no Avro reader
of its own without the spark-avro package. Types map as spark-avro maps them,
so a query written against either reader sees the same columns:

==================================  ============================================
Avro type                           Arrow type (Spark type)
==================================  ============================================
boolean, int, long, float, double   bool, int32, int64, float32, float64
string, enum; uuid                  string
bytes, fixed                        binary
int (date)                          date32 (date)
long (time-micros), int             time64[us] (time: ``spark.sql.timeType.enabled``)
(time-millis)
long (timestamp-millis/micros)      timestamp[ms/us, UTC] (timestamp)
long (local-timestamp-millis/       timestamp[ms/us] (timestamp_ntz)
micros)
bytes/fixed (decimal)               decimal128(precision, scale)
record, array, map                  struct, list, map<string, ...>
``["null", T]``                     T, nullable
``["null", int, long]``,            int64, float64 (spark-avro's widening)
``["null", float, double]``
``["null", T1, T2, ...]``           struct<member0: T1, member1: T2, ...>: the
                                    member of the value's branch set, the
                                    others null (spark-avro's form)
==================================  ============================================

:func:`merged_schema` is the one table of several files (a stream whose schema
grew between syncs): every field of any file, in the order first seen, with
the type of its first file; a file without a field reads it as null.
"""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, BinaryIO

import fastavro
import pyarrow as pa

from framework.errors import ConfigError

#: Rows of one batch handed on.
BATCH_ROWS = 10_000

_PRIMITIVES: dict[str, pa.DataType] = {
    "boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(), "double": pa.float64(),
    "string": pa.string(), "bytes": pa.binary(), "enum": pa.string(), "fixed": pa.binary(), "null": pa.null(),
}
_LOGICAL: dict[str, pa.DataType] = {
    "date": pa.date32(), "time-micros": pa.time64("us"), "time-millis": pa.time64("us"),
    "timestamp-millis": pa.timestamp("ms", tz="UTC"), "timestamp-micros": pa.timestamp("us", tz="UTC"),
    "local-timestamp-millis": pa.timestamp("ms"), "local-timestamp-micros": pa.timestamp("us"),
    "uuid": pa.string(),
}
_WIDENED = ({"int", "long"}, {"float", "double"})


class _Names:
    """The named types (records, enums, fixed) of one schema, as they are defined, for later references."""

    def __init__(self) -> None:
        self.defined: dict[str, Any] = {}

    def resolve(self, avro: Any) -> Any:
        if isinstance(avro, str) and avro not in _PRIMITIVES:
            found = self.defined.get(avro) or self.defined.get(avro.rpartition(".")[2])
            if found is None:
                raise ConfigError(f"Avro type `{avro}` is not defined before it is used in the file's schema")
            return found
        if isinstance(avro, Mapping) and avro.get("type") in ("record", "enum", "fixed") and "name" in avro:
            self.defined[str(avro["name"])] = avro
            self.defined[str(avro["name"]).rpartition(".")[2]] = avro
        return avro


def _kind(avro: Any) -> str:
    """The Avro type name of a (resolved) type: ``long``, ``record``, ``array``..."""
    if isinstance(avro, str):
        return avro
    if isinstance(avro, list):
        return "union"
    return str(avro.get("type"))


def _branches(avro: list) -> list[Any]:
    return [branch for branch in avro if branch != "null"]


def arrow_type(avro: Any, names: _Names | None = None) -> pa.DataType:
    """The Arrow type of values of the Avro type ``avro`` (a parsed schema or any type inside it)."""
    names = names or _Names()
    avro = names.resolve(avro)
    if isinstance(avro, list):
        branches = [names.resolve(b) for b in _branches(avro)]
        if not branches:
            return pa.null()
        if len(branches) == 1:
            return arrow_type(branches[0], names)
        kinds = {_kind(b) for b in branches}
        if any(kinds == widened and all(isinstance(b, str) for b in branches) for widened in _WIDENED):
            return pa.int64() if "long" in kinds else pa.float64()
        return pa.struct([pa.field(f"member{i}", arrow_type(b, names)) for i, b in enumerate(branches)])
    if isinstance(avro, str):
        return _PRIMITIVES[avro]
    if not isinstance(avro, Mapping):
        raise ConfigError(f"not an Avro type: {avro!r}")
    logical = avro.get("logicalType")
    if logical == "decimal" and "precision" in avro:
        return pa.decimal128(int(avro["precision"]), int(avro.get("scale", 0)))
    if logical in _LOGICAL:
        return _LOGICAL[str(logical)]
    kind = avro.get("type")
    if kind == "record":
        return pa.struct([pa.field(f["name"], arrow_type(f["type"], names)) for f in avro.get("fields", ())])
    if kind == "array":
        return pa.list_(pa.field("element", arrow_type(avro["items"], names)))
    if kind == "map":
        return pa.map_(pa.string(), arrow_type(avro["values"], names))
    if kind in ("enum", "fixed"):
        return _PRIMITIVES[str(kind)]
    return arrow_type(kind, names)  # {"type": "long"} and the like


def merged_schema(writer_schemas: Sequence[Mapping[str, Any]]) -> pa.Schema:
    """One Arrow schema for files with these writer schemas (top-level records): see the module docs."""
    fields: dict[str, pa.Field] = {}
    for schema in writer_schemas:
        if schema.get("type") != "record":
            raise ConfigError(f"an Avro file whose schema is a `{schema.get('type')}`, not a record, "
                              "cannot be read as a table")
        names = _Names()
        names.resolve(schema)
        for field in schema.get("fields", ()):
            if field["name"] not in fields:
                fields[field["name"]] = pa.field(field["name"], arrow_type(field["type"], names))
    return pa.schema(list(fields.values()))


def _fits(value: Any, avro: Any) -> bool:
    """Whether ``value``, as fastavro decodes it, belongs to the (resolved, non-null) branch ``avro``."""
    kind = _kind(avro)
    logical = avro.get("logicalType") if isinstance(avro, Mapping) else None
    if isinstance(value, bool):
        return kind == "boolean"
    if isinstance(value, dt.datetime):
        return logical in ("timestamp-millis", "timestamp-micros", "local-timestamp-millis", "local-timestamp-micros")
    if isinstance(value, dt.date):
        return logical == "date"
    if isinstance(value, dt.time):
        return logical in ("time-micros", "time-millis")
    if isinstance(value, decimal.Decimal):
        return logical == "decimal"
    if isinstance(value, uuid.UUID):
        return logical == "uuid"
    if isinstance(value, int):
        return kind in ("int", "long") and logical is None
    if isinstance(value, float):
        return kind in ("float", "double")
    if isinstance(value, str):
        return kind in ("string", "enum") and logical in (None, "uuid")
    if isinstance(value, (bytes, bytearray)):
        return kind in ("bytes", "fixed") and logical is None
    if isinstance(value, Mapping):
        return kind in ("record", "map")
    if isinstance(value, list):
        return kind == "array"
    return False


def _value(value: Any, avro: Any, names: _Names) -> Any:
    """``value`` as fastavro decoded it, shaped for :func:`arrow_type` of ``avro``."""
    if value is None:
        return None
    avro = names.resolve(avro)
    if isinstance(avro, list):
        branches = [names.resolve(b) for b in _branches(avro)]
        if len(branches) == 1:
            return _value(value, branches[0], names)
        kinds = {_kind(b) for b in branches}
        if any(kinds == widened and all(isinstance(b, str) for b in branches) for widened in _WIDENED):
            return value
        picked = next((i for i, b in enumerate(branches) if _fits(value, b)), None)
        if picked is None:
            raise ConfigError(f"an Avro value of type {type(value).__name__} matches no branch of {avro!r}")
        return {f"member{i}": _value(value, b, names) if i == picked else None for i, b in enumerate(branches)}
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(avro, Mapping):
        kind = avro.get("type")
        if kind == "record":
            return {f["name"]: _value(value.get(f["name"]), f["type"], names) for f in avro.get("fields", ())}
        if kind == "array":
            return [_value(item, avro["items"], names) for item in value]
        if kind == "map":
            return [(key, _value(item, avro["values"], names)) for key, item in value.items()]
    return value


def avro_batches(handle: BinaryIO, schema: pa.Schema, *, rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """The records of one Avro file as batches of ``schema`` (:func:`merged_schema` of its files)."""
    reader = fastavro.reader(handle)
    writer_schema = reader.writer_schema
    if not isinstance(writer_schema, Mapping) or writer_schema.get("type") != "record":
        raise ConfigError("an Avro file whose schema is not a record cannot be read as a table")
    names = _Names()
    arrow_type(writer_schema, names)  # every named type defined, whichever values are null
    fields = [(f["name"], f["type"]) for f in writer_schema.get("fields", ())]
    pending: list[dict[str, Any]] = []
    for record in reader:
        pending.append({name: _value(record.get(name), kind, names) for name, kind in fields})  # type: ignore[union-attr]
        if len(pending) >= rows:
            yield pa.RecordBatch.from_pylist(pending, schema=schema)
            pending = []
    if pending:
        yield pa.RecordBatch.from_pylist(pending, schema=schema)


def writer_schema(handle: BinaryIO) -> Mapping[str, Any]:
    """The writer schema of one Avro file (its header only is read)."""
    schema = fastavro.reader(handle).writer_schema
    if not isinstance(schema, Mapping):
        raise ConfigError("an Avro file whose schema is not a record cannot be read as a table")
    return schema


def avro_keys(keys: Iterable[str]) -> list[str]:
    """The Avro data files among listed keys: ``.avro`` files outside hidden (``.``) and internal (``_``) folders."""
    return sorted(key for key in keys if key.endswith(".avro")
                  and not any(part.startswith((".", "_")) for part in key.split("/")))


__all__ = ["BATCH_ROWS", "arrow_type", "avro_batches", "avro_keys", "merged_schema", "writer_schema"]
