"""How a stream's typed columns are stored in a table format: as for Parquet, but for what the format lacks.

Delta Lake has no time-of-day type: a `time64` column (a JSON Schema `time` string, with or without a zone) is
stored as ISO 8601 text `HH:MM:SS.ffffff` (a time with a zone converted to UTC first, as for Parquet). Iceberg's
`time` is microseconds without a zone, which is what the Parquet writer's `TIME(MICROS, isAdjustedToUTC=false)`
already is, so Iceberg stores every column as Parquet does.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa

from framework.typed.envelope import META


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


def kind_of(kind: pa.DataType) -> str:
    """A column type's kind, as far as a table can hold one in the other (units and widths aside)."""
    checks = (("integer", pa.types.is_integer), ("floating", pa.types.is_floating), ("decimal", pa.types.is_decimal),
              ("boolean", pa.types.is_boolean), ("timestamp", pa.types.is_timestamp), ("date", pa.types.is_date),
              ("time", pa.types.is_time), ("struct", pa.types.is_struct), ("map", pa.types.is_map))
    for name, check in checks:
        if check(kind):
            return name
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return "string"
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return "binary"
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return f"list<{kind_of(kind.value_type)}>"
    return str(kind)


def table_types(table_schema: pa.Schema | None, stored: pa.Schema) -> dict[str, pa.DataType]:
    """The columns the table holds with another kind than the stream's schema says, and the table's types for them
    (units and widths aside: a millisecond timestamp goes in a microsecond column as it is)."""
    if table_schema is None:
        return {}
    return {f.name: table_schema.field(f.name).type for f in stored
            if f.name in table_schema.names and kind_of(table_schema.field(f.name).type) != kind_of(f.type)}


def to_table_types(batch: pa.RecordBatch, types: Mapping[str, pa.DataType]) -> tuple[pa.RecordBatch, int]:
    """``batch`` with each column of ``types`` cast to the table's type: an integer goes into a floating point
    column as it is (widened); a value that does not fit (a fraction into an integer column, text into a number)
    is nulled with a change in ``_airbyte_meta`` (``NULLED``, ``DESTINATION_TYPECAST_ERROR``), as the S3
    destination's typing does. Returns the batch and how many values were nulled."""
    if not types:
        return batch, 0
    columns, fields = list(batch.columns), list(batch.schema)
    nulled: dict[int, list[str]] = {}
    for index, field in enumerate(fields):
        target = types.get(field.name)
        if target is None or target == field.type:
            continue
        try:
            cast = columns[index].cast(target, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            values = []
            for row, value in enumerate(columns[index].to_pylist()):
                try:
                    values.append(None if value is None else
                                  pa.array([value], field.type).cast(target, safe=True)[0].as_py())
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                    values.append(None)
                    nulled.setdefault(row, []).append(field.name)
            cast = pa.array(values, target)
        columns[index], fields[index] = cast, pa.field(field.name, target, True, field.metadata)
    if nulled and META in batch.schema.names:
        at = batch.schema.names.index(META)
        metas = columns[at].to_pylist()
        for row, names in nulled.items():
            metas[row]["changes"] = [*metas[row]["changes"], *({"field": name, "change": "NULLED",
                                                               "reason": "DESTINATION_TYPECAST_ERROR"}
                                                              for name in names)]
        columns[at] = pa.array(metas, batch.schema.field(META).type)
    schema = pa.schema(fields, metadata=batch.schema.metadata)
    return pa.RecordBatch.from_arrays(columns, schema=schema), sum(len(names) for names in nulled.values())


def with_table_types(schema: pa.Schema, types: Mapping[str, pa.DataType]) -> pa.Schema:
    """``schema`` with the columns of ``types`` in the table's types."""
    return pa.schema([pa.field(f.name, types[f.name], True, f.metadata) if f.name in types else f for f in schema],
                     metadata=schema.metadata)


__all__ = ["kind_of", "stored_batch", "stored_schema", "table_types", "to_table_types", "with_table_types"]
