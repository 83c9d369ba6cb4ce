"""Shared helpers of the typing tests: one-field streams, conversion, Parquet and Avro round trips."""

from __future__ import annotations

import io
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq

from framework.typed import S3_EXACT_PARQUET_WRITE_OPTIONS, RecordConverter, parse_schema

STREAM = "users"
EXTRACTED_AT_MS = 1_700_000_000_123


def one_field(field_schema: Any, name: str = "f") -> dict:
    """A stream schema with one property."""
    return {"type": "object", "properties": {name: field_schema}}


def converter(field_schema: Any, name: str = "f") -> RecordConverter:
    return RecordConverter(parse_schema(one_field(field_schema, name), stream=STREAM), stream=STREAM)


def convert(conv: RecordConverter, records: list[dict], **kwargs: Any) -> pa.RecordBatch:
    return conv.convert(records, extracted_at_ms=EXTRACTED_AT_MS, generation_id=4, sync_id=11, **kwargs)


def storage_values(column: pa.Array) -> list:
    """A column's values with dates, times and timestamps as their integers."""
    kind = column.type
    if pa.types.is_timestamp(kind) or pa.types.is_time64(kind):
        return column.cast(pa.int64()).to_pylist()
    if pa.types.is_date32(kind):
        return column.cast(pa.int32()).to_pylist()
    return column.to_pylist()


def changes(batch: pa.RecordBatch) -> list[list[dict]]:
    """Each record's ``_airbyte_meta.changes``."""
    return [meta["changes"] for meta in batch.column("_airbyte_meta").to_pylist()]


def nulled(field: str, reason: str = "DESTINATION_SERIALIZATION_ERROR") -> dict:
    return {"field": field, "change": "NULLED", "reason": reason}


def parquet_roundtrip(batch: pa.RecordBatch) -> pq.ParquetFile:
    """``batch`` written to an in-memory Parquet file (as the sink writes it in the S3 1.0 exact form, the
    Parquet format's ``time_adjusted_to_utc``: the seed's types), opened again."""
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_batches([batch]), sink, **S3_EXACT_PARQUET_WRITE_OPTIONS)
    sink.seek(0)
    return pq.ParquetFile(sink)


def parquet_column(file: pq.ParquetFile, path: str) -> dict:
    """Physical type, logical type (as JSON text), optional-ness of a leaf column of a Parquet file."""
    schema = file.schema
    for index in range(len(schema)):
        column = schema.column(index)
        if column.path == path:
            return {"physical": column.physical_type, "logical": column.logical_type.to_json(),
                    "definition_levels": column.max_definition_level}
    raise KeyError(f"{path} not in {[schema.column(i).path for i in range(len(schema))]}")


def avro_roundtrip(conv: RecordConverter, batch: pa.RecordBatch) -> tuple[dict, list[dict]]:
    """``batch`` written with fastavro and read back: the writer schema from the file and the records."""
    sink = io.BytesIO()
    fastavro.writer(sink, fastavro.parse_schema(conv.avro.schema), conv.to_avro_records(batch))
    sink.seek(0)
    reader = fastavro.reader(sink)
    records = list(reader)
    return reader.writer_schema, records


def avro_field(schema: dict, name: str) -> Any:
    """The type of a top-level field of an Avro record schema."""
    for field in schema["fields"]:
        if field["name"] == name:
            return field["type"]
    raise KeyError(name)
