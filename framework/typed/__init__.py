"""Typing records for the sink: JSON Schema to Arrow, Parquet and Avro types, and JSON records to typed batches.

Pure and per-stream compiled; it runs inside Spark tasks. The rules are those
of Airbyte's S3 destination 1.0 (the seed ``s3-destination-1.0-migration-guide``):

* :mod:`.types`: :func:`parse_schema` turns a stream's JSON Schema into a tree
  of field types (unions merged, schemaless parts :class:`Unknown`);
* :mod:`.arrow`: :func:`arrow_schema`, the envelope and data columns of the
  typed batches (and of Parquet files; see :data:`PARQUET_WRITE_OPTIONS` and
  :data:`S3_EXACT_PARQUET_WRITE_OPTIONS`);
* :mod:`.avro`: :func:`avro_schema` / :func:`build_avro_schema`, the Avro
  schema of the same records, with the field names it had to change;
* :mod:`.values`: what each type accepts from a JSON value;
* :mod:`.columns` and :mod:`.converter`: :class:`RecordConverter`, records to
  a typed ``pyarrow.RecordBatch``, values that do not fit nulled and recorded
  in ``_airbyte_meta.changes``; ``to_avro_records`` for fastavro;
* :mod:`.raw_ids`: random UUID text for ``_airbyte_raw_id``.

Usage::

    record_type = parse_schema(json_schema, stream="users")
    converter = RecordConverter(record_type, stream="users")
    batch = converter.convert(records, extracted_at_ms=now_ms, generation_id=1, sync_id=7)
"""

from framework.typed.arrow import PARQUET_WRITE_OPTIONS, S3_EXACT_PARQUET_WRITE_OPTIONS, arrow_schema, arrow_type
from framework.typed.avro import AvroSchema, avro_name, avro_records, avro_schema, build_avro_schema
from framework.typed.converter import RecordConverter
from framework.typed.errors import SchemaConflictError
from framework.typed.types import (
    Array,
    Boolean,
    Date,
    FieldType,
    Integer,
    Number,
    Object,
    String,
    TimestampWithoutTz,
    TimestampWithTz,
    TimeWithoutTz,
    TimeWithTz,
    Union,
    Unknown,
    parse_schema,
)

__all__ = [
    "Array",
    "AvroSchema",
    "Boolean",
    "Date",
    "FieldType",
    "Integer",
    "Number",
    "Object",
    "PARQUET_WRITE_OPTIONS",
    "RecordConverter",
    "S3_EXACT_PARQUET_WRITE_OPTIONS",
    "SchemaConflictError",
    "String",
    "TimeWithTz",
    "TimeWithoutTz",
    "TimestampWithTz",
    "TimestampWithoutTz",
    "Union",
    "Unknown",
    "arrow_schema",
    "arrow_type",
    "avro_name",
    "avro_records",
    "avro_schema",
    "build_avro_schema",
    "parse_schema",
]
