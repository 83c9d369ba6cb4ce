"""One schema for every file of a stream's folder, and batches made to fit it.

Readers that take one file's schema for a whole folder (``pyarrow.dataset``,
``pq.read_table`` on a folder, ``polars.read_parquet``, DuckDB's
``read_parquet`` without ``union_by_name``, Spark without ``mergeSchema``)
see every column of every file only when all the files share one schema.
:func:`unified_schema` computes it from the files' schemas, whatever made
them differ (a field the API added, a type the manifest changed, a column a
drift policy added):

* columns in a stable order: the envelope (``_airbyte_raw_id``,
  ``_airbyte_extracted_at``, ``_airbyte_generation_id``, ``_airbyte_meta``),
  then the stream's declared columns in their order, then any other column in
  the order the files (oldest first) show it;
* a column that is missing from a file is null there, so it is nullable; a
  column stays not nullable only where every file has it not nullable;
* types: the same type stays; a null column takes the other's type; integers
  of any width become int64; integers and floats become float64 (an integer
  beyond 2**53 to the nearest float64); timestamps
  of one time zone take the finest unit; any other conflict becomes a string
  column holding each value as text (:func:`text_of`: strings as they are,
  dates and times in ISO 8601, other values as their JSON text);
* a field keeps the metadata of its first appearance whose type it kept; the
  schema keeps the newest file's metadata.

:func:`conform` makes a batch of one of those files fit the unified schema.
Pure functions of pyarrow values: :mod:`framework.formats.rewrite` reads and
writes the files.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date, datetime, time
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from framework.typed.envelope import ENVELOPE_NAMES
from framework.typed.values import json_text

_UNITS = ("s", "ms", "us", "ns")


def unified_type(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    """The type a column of type ``a`` in some files and ``b`` in others has once the files are unified."""
    if a.equals(b):
        return a
    if pa.types.is_null(a):
        return b
    if pa.types.is_null(b):
        return a
    if pa.types.is_integer(a) and pa.types.is_integer(b):
        return pa.int64()
    if _numeric(a) and _numeric(b):
        return pa.float64()
    if pa.types.is_timestamp(a) and pa.types.is_timestamp(b) and a.tz == b.tz:
        return pa.timestamp(max(a.unit, b.unit, key=_UNITS.index), tz=a.tz)
    return pa.string()


def _numeric(kind: pa.DataType) -> bool:
    return pa.types.is_integer(kind) or pa.types.is_floating(kind)


def unified_schema(schemas: Sequence[pa.Schema], declared: Iterable[str] = ()) -> pa.Schema:
    """The schema every file of ``schemas`` (oldest first) is rewritten into; see the module docs.

    ``declared`` are the stream's column names in its schema's order (the
    envelope included or not); only the columns some file has are in the result.
    """
    types: dict[str, pa.DataType] = {}
    fields: dict[str, pa.Field] = {}  # the first appearance of each column whose type the column kept
    nullable: dict[str, bool] = {}
    present: dict[str, int] = {}  # in how many files
    for schema in schemas:
        for item in schema:
            name = item.name
            if name in types:
                kind = unified_type(types[name], item.type)
                if not kind.equals(types[name]):
                    types[name] = kind
                    fields[name] = item if item.type.equals(kind) else pa.field(name, kind)
                nullable[name] = nullable[name] or item.nullable
                present[name] += 1
            else:
                types[name], fields[name], nullable[name], present[name] = item.type, item, item.nullable, 1
    names = [n for n in ENVELOPE_NAMES if n in types]
    names += [n for n in dict.fromkeys(declared) if n in types and n not in names]
    taken = set(names)
    names += [n for n in types if n not in taken]  # first-seen order
    out = [fields[n].with_type(types[n]).with_nullable(nullable[n] or present[n] < len(schemas)) for n in names]
    metadata = schemas[-1].metadata if schemas else None
    return pa.schema(out, metadata=metadata)


def fits(schema: pa.Schema, unified: pa.Schema) -> bool:
    """Whether a file of ``schema`` already reads as ``unified`` (names, order, types and nullability;
    metadata aside)."""
    return schema.equals(unified, check_metadata=False)


def conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` (of a file whose columns :func:`unified_schema` took in) with ``schema``'s columns, in order:
    missing ones null, widened ones cast, conflicting ones as text."""
    arrays = []
    for item in schema:
        index = batch.schema.get_field_index(item.name)
        if index < 0:  # (not pa.nulls: its struct children would be null too, which Parquet refuses where required)
            arrays.append(pa.array([None] * batch.num_rows, item.type))
            continue
        column = batch.column(index)
        if column.type.equals(item.type):
            arrays.append(column)
        elif pa.types.is_string(item.type) and not pa.types.is_null(column.type):
            arrays.append(pa.array([text_of(v) for v in column.to_pylist()], pa.string()))
        else:  # an integer beyond 2**53 becomes the nearest float64, as any reader that widens it would make it
            arrays.append(pc.cast(column, item.type, safe=not pa.types.is_floating(item.type)))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def text_of(value: Any) -> str | None:
    """A value as the text a string column holds: a string as it is, a date or time in ISO 8601, anything
    else as its JSON text (``1`` -> ``"1"``, ``True`` -> ``"true"``, a struct -> ``{"a":1}``)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    return json_text(value)


__all__ = ["conform", "fits", "text_of", "unified_schema", "unified_type"]
