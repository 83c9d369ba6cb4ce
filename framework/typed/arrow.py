"""Arrow types of the typed batches, which Parquet files store as they are: :func:`arrow_schema`.

The envelope comes first, then the stream's top-level fields:

=========================== ============================================================
column                      Arrow type (Parquet type)
=========================== ============================================================
``_airbyte_raw_id``         string: UUID text (String)
``_airbyte_extracted_at``   timestamp[ms, UTC] (Int64 Timestamp(Millis, isAdjustedToUTC))
``_airbyte_generation_id``  int64
``_airbyte_meta``           struct<sync_id: int64, changes: list<struct<field: string,
                            change: string, reason: string>>>
=========================== ============================================================

The envelope columns are not nullable; every data field is. Field types:
string, bool, int64, float64, date32 (Int32 Date), time64[us] (Int64
Time(Micros)), timestamp[us, UTC] for timestamps with *and* without timezone
(Int64 Timestamp(Micros, isAdjustedToUTC=true)), struct for objects, list for
arrays, string (JSON text) for :class:`~framework.typed.types.Unknown`.
A union is the seed's disjoint record: ``struct<type: string, <member>: ...>``
with a field per member, named as the seed's table says (``integer``,
``number``, ``string``, ``boolean``, ``object``, ``array``, ``date``,
``time_with_timezone``, ``time_without_timezone``, ``timestamp_with_timezone``,
``timestamp_without_timezone``); ``type`` names the member that is set.

Parquet: pyarrow writes time64 columns with ``isAdjustedToUTC=false`` unless
the writer is given ``write_time_adjusted_to_utc=True`` (pyarrow 22 and
later). The seed wants true (:data:`S3_EXACT_PARQUET_WRITE_OPTIONS`, the
Parquet format's ``time_adjusted_to_utc`` setting), but Spark refuses
``TIME(MICROS, isAdjustedToUTC=true)`` and reads ``false`` (with
``spark.sql.timeType.enabled``), so the sink writes false by default
(:data:`PARQUET_WRITE_OPTIONS`). The values are UTC either way.

A stream whose schema is not an object with properties (the permissive
``{"type": "object", "properties": {}}``, say) has one data column,
``_airbyte_data``, with the whole record as JSON text, so nothing is lost.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

import framework.typed.types as t
from framework.typed.envelope import DATA, ENVELOPE_NAMES, EXTRACTED_AT, GENERATION_ID, META, RAW_ID
from framework.typed.errors import SchemaConflictError

CHANGE_TYPE = pa.struct([pa.field("field", pa.string(), nullable=False),
                         pa.field("change", pa.string(), nullable=False),
                         pa.field("reason", pa.string(), nullable=False)])
CHANGES_TYPE = pa.list_(pa.field("item", CHANGE_TYPE, nullable=False))
META_TYPE = pa.struct([pa.field("sync_id", pa.int64(), nullable=False),
                       pa.field("changes", CHANGES_TYPE, nullable=False)])
EXTRACTED_AT_TYPE = pa.timestamp("ms", tz="UTC")
TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")

ENVELOPE: tuple[pa.Field, ...] = (
    pa.field(RAW_ID, pa.string(), nullable=False),
    pa.field(EXTRACTED_AT, EXTRACTED_AT_TYPE, nullable=False),
    pa.field(GENERATION_ID, pa.int64(), nullable=False),
    pa.field(META, META_TYPE, nullable=False),
)

#: Keyword arguments for ``pyarrow.parquet.ParquetWriter`` as the sink writes by default: times
#: ``isAdjustedToUTC=false``, which Spark 4 reads (with ``spark.sql.timeType.enabled``).
PARQUET_WRITE_OPTIONS: Mapping[str, Any] = {"write_time_adjusted_to_utc": False}
#: The S3 destination 1.0's exact form (the Parquet format's ``time_adjusted_to_utc``): times
#: ``isAdjustedToUTC=true``, which Spark's Parquet reader refuses.
S3_EXACT_PARQUET_WRITE_OPTIONS: Mapping[str, Any] = {"write_time_adjusted_to_utc": True}

_SCALARS: dict[type, pa.DataType] = {
    t.String: pa.string(), t.Boolean: pa.bool_(), t.Integer: pa.int64(), t.Number: pa.float64(),
    t.Date: pa.date32(), t.TimeWithTz: pa.time64("us"), t.TimeWithoutTz: pa.time64("us"),
    t.TimestampWithTz: TIMESTAMP_TYPE, t.TimestampWithoutTz: TIMESTAMP_TYPE, t.Unknown: pa.string(),
}


def arrow_type(kind: t.FieldType) -> pa.DataType:
    """The Arrow type of values of ``kind`` (every child field nullable)."""
    scalar = _SCALARS.get(type(kind))
    if scalar is not None:
        return scalar
    if isinstance(kind, t.Object):
        return pa.struct([pa.field(name, arrow_type(child)) for name, child in kind.properties])
    if isinstance(kind, t.Array):
        return pa.list_(pa.field("item", arrow_type(kind.items)))
    if isinstance(kind, t.Union):
        return pa.struct([pa.field("type", pa.string())]
                         + [pa.field(option.name, arrow_type(option)) for option in kind.options])
    raise TypeError(f"no Arrow type for {kind!r}")


def data_fields(record_type: t.FieldType, stream: str) -> tuple[tuple[str, t.FieldType], ...]:
    """The top-level data columns: the record's properties, or ``_airbyte_data`` for anything else."""
    if not isinstance(record_type, t.Object):
        return ((DATA, record_type),)
    for name, _ in record_type.properties:
        if name in ENVELOPE_NAMES:
            raise SchemaConflictError(
                stream=stream, field=name, first="a field of the stream", second="the envelope column of that name",
                hint="rename the field (an AddFields and RemoveFields transformation, say)")
    return record_type.properties


def arrow_schema(record_type: t.FieldType, stream: str) -> pa.Schema:
    """The schema of the typed batches of a stream: envelope, then data fields."""
    return pa.schema(list(ENVELOPE) + [pa.field(name, arrow_type(kind))
                                       for name, kind in data_fields(record_type, stream)])
