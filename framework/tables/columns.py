"""How a stream's typed columns are stored in a table format: as for Parquet, but for what the format lacks.

Delta Lake has no time-of-day type: a `time64` column (a JSON Schema `time` string, with or without a zone) is
stored as ISO 8601 text `HH:MM:SS.ffffff` (a time with a zone converted to UTC first, as for Parquet). Iceberg's
`time` is microseconds without a zone, which is what the Parquet writer's `TIME(MICROS, isAdjustedToUTC=false)`
already is, so Iceberg stores every column as Parquet does.
"""

from __future__ import annotations

import pyarrow as pa


def _stored_type(kind: pa.DataType, format_type: str) -> pa.DataType:
    if format_type != "delta":
        return kind
    if pa.types.is_time(kind):
        return pa.string()
    if pa.types.is_struct(kind):
        return pa.struct([pa.field(f.name, _stored_type(f.type, format_type), f.nullable) for f in kind])
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        item = kind.value_field
        return pa.list_(pa.field(item.name, _stored_type(item.type, format_type), item.nullable))
    return kind


def stored_schema(schema: pa.Schema, format_type: str) -> pa.Schema:
    """``schema`` (the stream's Parquet schema) as the table format ``format_type`` stores it."""
    fields = [pa.field(f.name, _stored_type(f.type, format_type), f.nullable, f.metadata) for f in schema]
    return pa.schema(fields, metadata=schema.metadata)


def stored_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` cast to ``schema`` (a :func:`stored_schema`) where their columns differ."""
    if batch.schema.equals(schema, check_metadata=False):
        return batch
    columns = [column if column.type == field.type else column.cast(field.type)
               for column, field in zip(batch.columns, schema)]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


__all__ = ["stored_batch", "stored_schema"]
