"""The Avro schema, checked in files fastavro writes and reads back (the seed's tables), and Avro names."""

from __future__ import annotations

import uuid
from datetime import date, datetime, time, timezone

import fastavro
import pytest
from typed.helpers import STREAM, avro_field, avro_roundtrip, convert, converter

from framework.typed import RecordConverter, avro_name, avro_schema, parse_schema


def file_type(field_schema, value, name="f"):
    conv = converter(field_schema, name)
    schema, records = avro_roundtrip(conv, convert(conv, [{name: value}]))
    return avro_field(schema, conv.avro.renamed.get((name,), name)), records[0]


@pytest.mark.parametrize("field_schema, value, avro_type", [
    ({"type": "string"}, "a", ["null", "string"]),
    ({"type": "boolean"}, True, ["null", "boolean"]),
    ({"type": "integer"}, 1, ["null", "long"]),
    ({"type": "number"}, 1.5, ["null", "double"]),
])
def test_primitive_types(field_schema, value, avro_type):
    kind, record = file_type(field_schema, value)
    assert kind == avro_type
    assert record["f"] == value


@pytest.mark.parametrize("field_schema, value, avro_type, read_back", [
    ({"type": "string", "format": "date"}, "2024-01-02", {"type": "int", "logicalType": "date"}, date(2024, 1, 2)),
    ({"type": "string", "format": "time", "airbyte_type": "time_without_timezone"}, "10:00:00",
     {"type": "long", "logicalType": "time-micros"}, time(10)),
    ({"type": "string", "format": "time", "airbyte_type": "time_with_timezone"}, "10:00:00+01:00",
     {"type": "long", "logicalType": "time-micros"}, time(9)),
    ({"type": "string", "format": "date-time", "airbyte_type": "timestamp_without_timezone"},
     "2024-01-02T03:04:05", {"type": "long", "logicalType": "timestamp-micros"},
     datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc)),
    ({"type": "string", "format": "date-time", "airbyte_type": "timestamp_with_timezone"},
     "2024-01-02T03:04:05-02:00", {"type": "long", "logicalType": "timestamp-micros"},
     datetime(2024, 1, 2, 5, 4, 5, tzinfo=timezone.utc)),
])
def test_date_and_time_types(field_schema, value, avro_type, read_back):
    kind, record = file_type(field_schema, value)
    assert kind == ["null", avro_type]
    assert record["f"] == read_back


def test_envelope_types_and_values():
    conv = converter({"type": "integer"})
    batch = convert(conv, [{"f": 1}, {"f": "x"}])
    schema, records = avro_roundtrip(conv, batch)
    assert [field["name"] for field in schema["fields"]] == [
        "_airbyte_raw_id", "_airbyte_extracted_at", "_airbyte_generation_id", "_airbyte_meta", "f"]
    assert avro_field(schema, "_airbyte_raw_id") == {"type": "string", "logicalType": "uuid"}
    assert avro_field(schema, "_airbyte_extracted_at") == {"type": "long", "logicalType": "timestamp-millis"}
    assert avro_field(schema, "_airbyte_generation_id") == "long"
    meta = avro_field(schema, "_airbyte_meta")
    assert meta["type"] == "record"
    assert [(f["name"], f["type"]) for f in meta["fields"]][0] == ("sync_id", "long")
    changes = meta["fields"][1]
    assert changes["name"] == "changes" and changes["type"]["type"] == "array"
    item = changes["type"]["items"]
    assert [(f["name"], f["type"]) for f in item["fields"]] == [
        ("field", "string"), ("change", "string"), ("reason", "string")]
    first, second = records
    assert isinstance(first["_airbyte_raw_id"], uuid.UUID) and first["_airbyte_raw_id"].version == 4
    assert first["_airbyte_extracted_at"] == datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=timezone.utc)
    assert first["_airbyte_generation_id"] == 4
    assert first["_airbyte_meta"] == {"sync_id": 11, "changes": []}
    assert second["f"] is None
    assert second["_airbyte_meta"]["changes"] == [
        {"field": "f", "change": "NULLED", "reason": "DESTINATION_SERIALIZATION_ERROR"}]


def test_objects_are_nested_records_with_unique_names():
    schema = {"type": "object", "properties": {
        "a": {"type": "object", "properties": {"b": {"type": "object", "properties": {"c": {"type": "integer"}}}}},
        "a_b": {"type": "object", "properties": {"x": {"type": "string"}}},
        "free": {"type": "object"},
    }}
    conv = RecordConverter(parse_schema(schema, stream=STREAM), stream=STREAM)
    parsed = fastavro.parse_schema(conv.avro.schema)  # refuses duplicate names
    names = []

    def collect(node):
        if isinstance(node, dict):
            if node.get("type") == "record":
                names.append(node["name"])
            for value in node.values():
                collect(value)
        elif isinstance(node, list):
            for value in node:
                collect(value)

    collect(conv.avro.schema)
    assert len(names) == len(set(names)) == 6  # root, meta, change, a, a.b, a_b
    assert avro_field(conv.avro.schema, "free") == ["null", "string"]
    batch = convert(conv, [{"a": {"b": {"c": 1}}, "a_b": {"x": "y"}, "free": {"k": [1]}}])
    _, records = avro_roundtrip(conv, batch)
    assert records[0]["a"] == {"b": {"c": 1}}
    assert records[0]["a_b"] == {"x": "y"}
    assert records[0]["free"] == '{"k":[1]}'
    assert parsed["type"] == "record"


def test_arrays_have_nullable_items():
    kind, record = file_type({"type": "array", "items": {"type": "integer"}}, [1, "Alice"])
    assert kind == ["null", {"type": "array", "items": ["null", "long"]}]
    assert record["f"] == [1, None]


def test_arrays_of_unions_have_mixed_items():
    kind, record = file_type({"type": "array", "items": {"oneOf": [{"type": "integer"}, {"type": "string"}]}},
                             [1, "Alice", False])
    assert kind == ["null", {"type": "array", "items": ["null", "long", "string"]}]
    assert record["f"] == [1, "Alice", None]


# Merging Like Options in Unions (seed table), Avro column.
def test_merging_like_options():
    kind, record = file_type({"oneOf": [{"type": "integer"}, {"type": "integer"}]}, 3)
    assert kind == ["null", "long"]
    kind, record = file_type({"oneOf": [{"type": "integer"}, {"type": "string"}, {"type": "integer"}]}, "x")
    assert kind == ["null", "long", "string"]
    assert record["f"] == "x"


@pytest.mark.parametrize("value", [7, "seven", True, 2.5, {"id": 10, "name": "Alice"}, "2024-01-02"])
def test_union_values_land_in_their_branch(value):
    union = {"oneOf": [{"type": "integer"}, {"type": "string"}, {"type": "boolean"}, {"type": "number"},
                       {"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"}}},
                       {"type": "string", "format": "date"}]}
    conv = converter(union)
    branches = avro_field(conv.avro.schema, "f")
    assert branches[:5] == ["null", "long", "string", "boolean", "double"]
    assert branches[6] == {"type": "int", "logicalType": "date"}
    _, records = avro_roundtrip(conv, convert(conv, [{"f": value}]))
    assert records[0]["f"] == value  # a string date goes to `string`, the first member that takes it


def test_date_member_is_written_as_a_date_not_a_long():
    conv = converter({"oneOf": [{"type": "integer"}, {"type": "string", "format": "date"}]})
    _, records = avro_roundtrip(conv, convert(conv, [{"f": "2024-01-02"}, {"f": 5}]))
    assert [record["f"] for record in records] == [date(2024, 1, 2), 5]


def test_members_sharing_an_avro_type_become_the_disjoint_record():
    # integer and timestamp are both longs: an Avro union cannot hold both.
    conv = converter({"oneOf": [{"type": "integer"}, {"type": "string", "format": "date-time"}]})
    kind = avro_field(conv.avro.schema, "f")
    assert kind[0] == "null" and kind[1]["type"] == "record"
    assert [f["name"] for f in kind[1]["fields"]] == ["type", "integer", "timestamp_with_timezone"]
    _, records = avro_roundtrip(conv, convert(conv, [{"f": 5}, {"f": "2024-01-02T00:00:00Z"}]))
    assert records[0]["f"] == {"type": "integer", "integer": 5, "timestamp_with_timezone": None}
    assert records[1]["f"] == {"type": "timestamp_with_timezone", "integer": None,
                               "timestamp_with_timezone": datetime(2024, 1, 2, tzinfo=timezone.utc)}


@pytest.mark.parametrize("name, expected", [
    ("id", "id"),
    ("_ok9", "_ok9"),
    ("first name", "first_name"),
    ("e-mail", "e_mail"),
    ("9lives", "_9lives"),
    ("café", "cafe"),
    ("straße", "stra_e"),
    ("", "_"),
    ("a.b", "a_b"),
])
def test_avro_names(name, expected):
    assert avro_name(name) == expected


def test_renamed_fields_are_mapped_and_clashes_get_suffixes():
    schema = {"type": "object", "properties": {
        "first name": {"type": "string"},
        "first_name": {"type": "string"},
        "1st": {"type": "object", "properties": {"a-b": {"type": "integer"}, "a_b": {"type": "integer"}}},
    }}
    conv = RecordConverter(parse_schema(schema, stream="my-stream"), stream="my-stream")
    assert conv.avro.renamed == {("first name",): "first_name_2", ("1st",): "_1st", ("1st", "a-b"): "a_b_2"}
    assert conv.avro.schema["name"] == "my_stream"
    batch = convert(conv, [{"first name": "A", "first_name": "B", "1st": {"a-b": 1, "a_b": 2}}])
    _, records = avro_roundtrip(conv, batch)
    assert records[0]["first_name_2"] == "A" and records[0]["first_name"] == "B"
    assert records[0]["_1st"] == {"a_b_2": 1, "a_b": 2}


def test_avro_schema_function_returns_the_dict():
    record_type = parse_schema({"type": "object", "properties": {"id": {"type": "integer"}}}, stream=STREAM)
    schema = avro_schema(record_type, STREAM)
    assert schema == RecordConverter(record_type, stream=STREAM).avro.schema
    fastavro.parse_schema(schema)


def test_union_of_string_and_schemaless_object():
    # Both are strings in Avro (the object as JSON text): the disjoint record again.
    conv = converter({"oneOf": [{"type": "string"}, {"type": "object"}]})
    kind = avro_field(conv.avro.schema, "f")
    assert [f["name"] for f in kind[1]["fields"]] == ["type", "string", "object"]
    _, records = avro_roundtrip(conv, convert(conv, [{"f": "a"}, {"f": {"k": 1}}]))
    assert records[0]["f"] == {"type": "string", "string": "a", "object": None}
    assert records[1]["f"] == {"type": "object", "string": None, "object": '{"k":1}'}


def test_batches_read_back_from_parquet_convert_the_same():
    from typed.helpers import parquet_roundtrip

    conv = converter({"type": "object", "properties": {
        "ts": {"type": "array", "items": {"type": "string", "format": "date-time"}},
        "u": {"oneOf": [{"type": "integer"}, {"type": "string"}]}}})
    batch = convert(conv, [{"f": {"ts": ["2024-01-02T00:00:00Z", None], "u": "x"}}])
    again = parquet_roundtrip(batch).read().to_batches()[0]
    assert again.schema.field("f").type.field("ts").type.value_field.name == "element"
    assert list(conv.to_avro_records(again))[0]["f"] == list(conv.to_avro_records(batch))[0]["f"] == {
        "ts": [1_704_153_600_000_000, None], "u": ("string", "x")}
