"""Arrow schema of the typed batches, checked in the Parquet files pyarrow writes from them (the seed's tables)."""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typed.helpers import STREAM, convert, converter, parquet_column, parquet_roundtrip

from framework.typed import (
    PARQUET_WRITE_OPTIONS,
    S3_EXACT_PARQUET_WRITE_OPTIONS,
    RecordConverter,
    SchemaConflictError,
    parse_schema,
)

TIMESTAMP_US_UTC = {"Type": "Timestamp", "isAdjustedToUTC": True, "timeUnit": "microseconds",
                    "is_from_converted_type": False, "force_set_converted_type": False}


def logical(column: dict) -> dict:
    return json.loads(column["logical"])


def written(field_schema, value) -> pq.ParquetFile:
    conv = converter(field_schema)
    return parquet_roundtrip(convert(conv, [{"f": value}]))


@pytest.mark.parametrize("field_schema, value, arrow_type, physical, logical_type", [
    ({"type": "string"}, "a", pa.string(), "BYTE_ARRAY", {"Type": "String"}),
    ({"type": "boolean"}, True, pa.bool_(), "BOOLEAN", {"Type": "None"}),
    ({"type": "integer"}, 1, pa.int64(), "INT64", {"Type": "None"}),
    ({"type": "number"}, 1.5, pa.float64(), "DOUBLE", {"Type": "None"}),
])
def test_primitive_types(field_schema, value, arrow_type, physical, logical_type):
    conv = converter(field_schema)
    assert conv.schema.field("f").type == arrow_type
    assert conv.schema.field("f").nullable
    column = parquet_column(written(field_schema, value), "f")
    assert column["physical"] == physical
    assert logical(column) == logical_type
    assert column["definition_levels"] == 1  # Optional


@pytest.mark.parametrize("field_schema, value, arrow_type, physical, logical_type", [
    ({"type": "string", "format": "date"}, "2024-01-02", pa.date32(), "INT32", {"Type": "Date"}),
    ({"type": "string", "format": "time", "airbyte_type": "time_without_timezone"}, "10:00:00",
     pa.time64("us"), "INT64", {"Type": "Time", "isAdjustedToUTC": True, "timeUnit": "microseconds"}),
    ({"type": "string", "format": "time", "airbyte_type": "time_with_timezone"}, "10:00:00+01:00",
     pa.time64("us"), "INT64", {"Type": "Time", "isAdjustedToUTC": True, "timeUnit": "microseconds"}),
    ({"type": "string", "format": "date-time", "airbyte_type": "timestamp_without_timezone"},
     "2024-01-02T03:04:05", pa.timestamp("us", "UTC"), "INT64", TIMESTAMP_US_UTC),
    ({"type": "string", "format": "date-time", "airbyte_type": "timestamp_with_timezone"},
     "2024-01-02T03:04:05Z", pa.timestamp("us", "UTC"), "INT64", TIMESTAMP_US_UTC),
])
def test_date_and_time_types(field_schema, value, arrow_type, physical, logical_type):
    conv = converter(field_schema)
    assert conv.schema.field("f").type == arrow_type
    column = parquet_column(written(field_schema, value), "f")
    assert (column["physical"], logical(column), column["definition_levels"]) == (physical, logical_type, 1)


def test_pyarrow_writes_times_adjusted_to_utc_only_when_asked():
    """What pyarrow does on its own: time64 gets isAdjustedToUTC=false; S3_EXACT_PARQUET_WRITE_OPTIONS makes
    it true (the seed's form, which Spark refuses), PARQUET_WRITE_OPTIONS (the sink's default) keeps it false."""
    batch = convert(converter({"type": "string", "format": "time"}), [{"f": "10:00:00"}])

    def adjusted(**options) -> bool:
        sink = io.BytesIO()
        pq.write_table(pa.Table.from_batches([batch]), sink, **options)
        sink.seek(0)
        return logical(parquet_column(pq.ParquetFile(sink), "f"))["isAdjustedToUTC"]

    assert adjusted() is False
    assert S3_EXACT_PARQUET_WRITE_OPTIONS == {"write_time_adjusted_to_utc": True}
    assert adjusted(**S3_EXACT_PARQUET_WRITE_OPTIONS) is True
    assert logical(parquet_column(parquet_roundtrip(batch), "f"))["isAdjustedToUTC"] is True
    assert PARQUET_WRITE_OPTIONS == {"write_time_adjusted_to_utc": False}
    assert adjusted(**PARQUET_WRITE_OPTIONS) is False


def test_envelope_types():
    conv = converter({"type": "integer"})
    assert conv.schema.names[:4] == ["_airbyte_raw_id", "_airbyte_extracted_at", "_airbyte_generation_id",
                                     "_airbyte_meta"]
    assert conv.schema.names[4:] == ["f"]
    file = parquet_roundtrip(convert(conv, [{"f": 1}]))
    raw_id = parquet_column(file, "_airbyte_raw_id")
    assert (raw_id["physical"], logical(raw_id), raw_id["definition_levels"]) == ("BYTE_ARRAY", {"Type": "String"}, 0)
    extracted = parquet_column(file, "_airbyte_extracted_at")
    assert extracted["physical"] == "INT64" and extracted["definition_levels"] == 0
    assert logical(extracted) == {**TIMESTAMP_US_UTC, "timeUnit": "milliseconds"}
    generation = parquet_column(file, "_airbyte_generation_id")
    assert (generation["physical"], generation["definition_levels"]) == ("INT64", 0)
    assert parquet_column(file, "_airbyte_meta.sync_id")["physical"] == "INT64"
    for name in ("field", "change", "reason"):
        column = parquet_column(file, f"_airbyte_meta.changes.list.element.{name}")
        assert (column["physical"], logical(column)) == ("BYTE_ARRAY", {"Type": "String"})
    assert file.schema_arrow.field("_airbyte_meta").type == pa.struct([
        pa.field("sync_id", pa.int64(), nullable=False),
        pa.field("changes", pa.list_(pa.field("element", pa.struct([
            pa.field("field", pa.string(), nullable=False), pa.field("change", pa.string(), nullable=False),
            pa.field("reason", pa.string(), nullable=False)]), nullable=False)), nullable=False)])


def test_objects_are_records_and_schemaless_parts_are_strings():
    conv = converter({"type": "object", "properties": {"id": {"type": "integer"}, "free": {"type": "object"},
                                                       "list": {"type": "array"}}})
    assert conv.schema.field("f").type == pa.struct([("id", pa.int64()), ("free", pa.string()),
                                                     ("list", pa.string())])
    file = parquet_roundtrip(convert(conv, [{"f": {"id": 1, "free": {}, "list": []}}]))
    assert parquet_column(file, "f.id")["physical"] == "INT64"
    assert logical(parquet_column(file, "f.free")) == {"Type": "String"}


def test_arrays_are_lists():
    conv = converter({"type": "array", "items": {"type": "integer"}})
    assert conv.schema.field("f").type == pa.list_(pa.int64())
    file = parquet_roundtrip(convert(conv, [{"f": [1, 2]}]))
    assert parquet_column(file, "f.list.element")["physical"] == "INT64"


# Disjoint Record Type Names (seed table): one member per option, named as the table says.
@pytest.mark.parametrize("option, name, arrow_type, physical", [
    ({"type": "integer"}, "integer", pa.int64(), "INT64"),
    ({"type": "string"}, "string", pa.string(), "BYTE_ARRAY"),
    ({"type": "boolean"}, "boolean", pa.bool_(), "BOOLEAN"),
    ({"type": "object", "properties": {"id": {"type": "integer"}}}, "object", pa.struct([("id", pa.int64())]),
     None),
    ({"type": "array", "items": {"type": "integer"}}, "array", pa.list_(pa.int64()), None),
    ({"type": "string", "format": "date"}, "date", pa.date32(), "INT32"),
    ({"type": "string", "format": "time", "airbyte_type": "time_with_timezone"}, "time_with_timezone",
     pa.time64("us"), "INT64"),
    ({"type": "string", "format": "time", "airbyte_type": "time_without_timezone"}, "time_without_timezone",
     pa.time64("us"), "INT64"),
    ({"type": "string", "format": "date-time", "airbyte_type": "timestamp_with_timezone"},
     "timestamp_with_timezone", pa.timestamp("us", "UTC"), "INT64"),
    ({"type": "string", "format": "date-time", "airbyte_type": "timestamp_without_timezone"},
     "timestamp_without_timezone", pa.timestamp("us", "UTC"), "INT64"),
    ({"type": "number"}, "number", pa.float64(), "DOUBLE"),
])
def test_disjoint_record_names(option, name, arrow_type, physical):
    other = {"type": "boolean"} if name != "boolean" else {"type": "integer"}
    conv = converter({"oneOf": [other, option]})
    union = conv.schema.field("f").type
    assert union.names == ["type", "integer" if name == "boolean" else "boolean", name]
    assert union.field("type").type == pa.string()
    assert union.field(name).type == arrow_type
    if physical:
        file = parquet_roundtrip(convert(conv, [{"f": None}]))
        assert parquet_column(file, f"f.{name}")["physical"] == physical
        assert parquet_column(file, "f.type")["physical"] == "BYTE_ARRAY"


def test_seed_union_examples():
    conv = converter({"oneOf": [{"type": "integer"}, {"type": "string"}]})
    assert conv.schema.field("f").type == pa.struct([("type", pa.string()), ("integer", pa.int64()),
                                                     ("string", pa.string())])
    conv = converter({"oneOf": [{"type": "boolean"}, {"type": "object", "properties": {
        "id": {"type": "integer"}, "name": {"type": "string"}}}]})
    assert conv.schema.field("f").type == pa.struct([
        ("type", pa.string()), ("boolean", pa.bool_()),
        ("object", pa.struct([("id", pa.int64()), ("name", pa.string())]))])


# Merging Like Options in Unions (seed table), Parquet column.
def test_merging_like_options():
    assert converter({"oneOf": [{"type": "integer"}, {"type": "integer"}]}).schema.field("f").type == pa.int64()
    merged = converter({"oneOf": [{"type": "integer"}, {"type": "string"}, {"type": "integer"}]})
    assert merged.schema.field("f").type == pa.struct([("type", pa.string()), ("integer", pa.int64()),
                                                       ("string", pa.string())])


def test_a_schema_without_properties_keeps_the_record_as_json_text():
    conv = RecordConverter(parse_schema({"type": "object", "properties": {}}, stream=STREAM), stream=STREAM)
    assert conv.schema.names[4:] == ["_airbyte_data"]
    batch = convert(conv, [{"id": 1, "name": "Alice"}])
    assert json.loads(batch.column("_airbyte_data")[0].as_py()) == {"id": 1, "name": "Alice"}


def test_a_field_named_like_an_envelope_column_is_refused():
    schema = {"type": "object", "properties": {"_airbyte_meta": {"type": "string"}}}
    with pytest.raises(SchemaConflictError, match="_airbyte_meta"):
        RecordConverter(parse_schema(schema, stream=STREAM), stream=STREAM)
