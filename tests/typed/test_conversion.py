"""RecordConverter: records to typed batches, values that do not fit nulled and recorded (the seed's tables)."""

from __future__ import annotations

import copy
import json
import uuid
from datetime import date

import pyarrow as pa
import pytest
from typed.helpers import STREAM, changes, convert, converter, nulled, storage_values

from framework.typed import RecordConverter, parse_schema
from framework.typed import columns as columns_module

SIZE = "DESTINATION_FIELD_SIZE_LIMITATION"


def one(field_schema, value, name="f"):
    """The converted value of one field of one record, and that record's changes."""
    conv = converter(field_schema, name)
    batch = convert(conv, [{name: value}])
    return storage_values(batch.column(name))[0], changes(batch)[0]


# Time of Day Conversion Bugfix (seed table). The seed prints 720000000 for the second row, a typo:
# 02:00:00 UTC is 7200000000 microseconds.
@pytest.mark.parametrize("text, micros", [
    ("12:00:00-01:00", 46_800_000_000),
    ("04:00:00+02:00", 7_200_000_000),
    ("04:00:00+05:30", 81_000_000_000),
])
def test_time_of_day_with_timezone_is_converted_to_utc(text, micros):
    schema = {"type": "string", "format": "time", "airbyte_type": "time_with_timezone"}
    assert one(schema, text) == (micros, [])


@pytest.mark.parametrize("field_schema, value, expected", [
    ({"type": "string", "format": "time", "airbyte_type": "time_without_timezone"}, "04:00:00+05:30",
     14_400_000_000),  # wall-clock time kept, offset ignored
    ({"type": "string", "format": "time"}, "04:00:00", 14_400_000_000),  # no offset: taken as UTC
    ({"type": "string", "format": "time"}, "04:00", 14_400_000_000),
    ({"type": "string", "format": "time"}, "23:59:59.999999Z", 86_399_999_999),
    ({"type": "string", "format": "date-time"}, "2024-01-01T00:00:00Z", 1_704_067_200_000_000),
    ({"type": "string", "format": "date-time"}, "2024-01-01T02:00:00+02:00", 1_704_067_200_000_000),
    ({"type": "string", "format": "date-time"}, "2024-01-01T00:00:00", 1_704_067_200_000_000),  # naive: UTC
    ({"type": "string", "format": "date-time"}, "2024-01-01", 1_704_067_200_000_000),
    ({"type": "string", "format": "date-time"}, "2024/01/01T00:00:00Z", 1_704_067_200_000_000),
    ({"type": "string", "format": "date-time"}, "2024-01-01T00:00:00.1234567Z", 1_704_067_200_123_456),
    ({"type": "string", "format": "date-time", "airbyte_type": "timestamp_without_timezone"},
     "2024-01-01T02:00:00+02:00", 1_704_074_400_000_000),  # wall clock
    ({"type": "string", "format": "date"}, "1970-01-02", 1),
    ({"type": "string", "format": "date"}, "1969-12-31", -1),
    ({"type": "string", "format": "date"}, "2024-01-02T23:00:00-05:00", 19_724),  # the date as written
    ({"type": "string", "format": "date"}, "2024.01.02", 19_724),
])
def test_dates_times_and_timestamps(field_schema, value, expected):
    assert one(field_schema, value) == (expected, [])


@pytest.mark.parametrize("field_schema, value", [
    ({"type": "string", "format": "date-time"}, "yesterday"),
    ({"type": "string", "format": "date-time"}, "2024-02-30T00:00:00Z"),
    ({"type": "string", "format": "date-time"}, "0000-01-01T00:00:00Z"),
    ({"type": "string", "format": "date-time"}, 1_704_067_200),
    ({"type": "string", "format": "date"}, "2023-02-29"),
    ({"type": "string", "format": "date"}, True),
    ({"type": "string", "format": "time"}, "25:00"),
    ({"type": "string", "format": "time"}, {"h": 1}),
])
def test_unreadable_dates_and_times_are_nulled(field_schema, value):
    assert one(field_schema, value) == (None, [nulled("f")])


@pytest.mark.parametrize("field_schema, value, expected", [
    ({"type": "integer"}, 5, 5),
    ({"type": "integer"}, -(2 ** 63), -(2 ** 63)),
    ({"type": "integer"}, 2 ** 63 - 1, 2 ** 63 - 1),
    ({"type": "integer"}, 1.0, 1),
    ({"type": "integer"}, "12", 12),  # Airbyte parses integer text
    ({"type": "integer"}, "-007", -7),
    ({"type": "number"}, 1, 1.0),
    ({"type": "number"}, 2.5, 2.5),
    ({"type": "number"}, "2.5", 2.5),
    ({"type": "number"}, "1e3", 1000.0),
    ({"type": "number"}, 2 ** 53 + 1, float(2 ** 53 + 1)),
    ({"type": "boolean"}, False, False),
    ({"type": "string"}, "text", "text"),
    ({"type": "string"}, 12, "12"),  # Airbyte writes other values as their JSON text
    ({"type": "string"}, True, "true"),
    ({"type": "string"}, {"a": [1]}, '{"a":[1]}'),
])
def test_primitive_values(field_schema, value, expected):
    assert one(field_schema, value) == (expected, [])


@pytest.mark.parametrize("field_schema, value, reason", [
    ({"type": "integer"}, 2 ** 63, SIZE),
    ({"type": "integer"}, -(2 ** 63) - 1, SIZE),
    ({"type": "integer"}, "99999999999999999999", SIZE),
    ({"type": "integer"}, 1e300, SIZE),
    ({"type": "integer"}, 1.5, "DESTINATION_SERIALIZATION_ERROR"),
    ({"type": "integer"}, True, "DESTINATION_SERIALIZATION_ERROR"),  # booleans are not integers
    ({"type": "integer"}, "1.0", "DESTINATION_SERIALIZATION_ERROR"),
    ({"type": "integer"}, "Alice", "DESTINATION_SERIALIZATION_ERROR"),
    ({"type": "integer"}, [1], "DESTINATION_SERIALIZATION_ERROR"),
    ({"type": "number"}, True, "DESTINATION_SERIALIZATION_ERROR"),
    ({"type": "number"}, "NaN", "DESTINATION_SERIALIZATION_ERROR"),
    ({"type": "number"}, float("nan"), "DESTINATION_SERIALIZATION_ERROR"),  # NaN in a body (Airbyte reads it)
    ({"type": "number"}, float("inf"), "DESTINATION_SERIALIZATION_ERROR"),
    ({"type": "number"}, float("-inf"), "DESTINATION_SERIALIZATION_ERROR"),
    ({"type": "integer"}, float("nan"), "DESTINATION_SERIALIZATION_ERROR"),
    ({"type": "number"}, "1_000", "DESTINATION_SERIALIZATION_ERROR"),
    ({"type": "number"}, 10 ** 400, SIZE),
    ({"type": "number"}, "1e400", SIZE),
    ({"type": "boolean"}, 1, "DESTINATION_SERIALIZATION_ERROR"),
    ({"type": "boolean"}, "true", "DESTINATION_SERIALIZATION_ERROR"),
    ({"type": "string"}, "\ud800", "DESTINATION_SERIALIZATION_ERROR"),  # a lone surrogate is not UTF-8
    # NaN and Infinity inside JSON text (which has none): nulled with a change, never written as null silently
    ({"type": "object"}, {"a": {"b": float("nan")}}, "DESTINATION_SERIALIZATION_ERROR"),
    ({"type": "array"}, [1.0, float("inf")], "DESTINATION_SERIALIZATION_ERROR"),
    ({"type": "string"}, float("-inf"), "DESTINATION_SERIALIZATION_ERROR"),
    ({}, [float("nan")], "DESTINATION_SERIALIZATION_ERROR"),
])
def test_values_that_do_not_fit_are_nulled_with_their_reason(field_schema, value, reason):
    assert one(field_schema, value) == (None, [nulled("f", reason)])


def test_a_non_finite_number_among_finite_ones_is_the_only_value_nulled():
    conv = converter({"type": "number"})
    batch = convert(conv, [{"f": 1.5}, {"f": float("nan")}, {"f": 2.0}, {"f": float("inf")}])
    assert batch.column("f").to_pylist() == [1.5, None, 2.0, None]
    assert [len(c) for c in changes(batch)] == [0, 1, 0, 1]


def test_nulls_and_missing_fields_are_not_changes():
    conv = converter({"type": "integer"})
    batch = convert(conv, [{"f": None}, {}, {"other": 1}])
    assert batch.column("f").to_pylist() == [None, None, None]
    assert changes(batch) == [[], [], []]


# Object Types (seed table).
def test_undocumented_fields_are_dropped_silently():
    conv = RecordConverter(parse_schema({"type": "object", "properties": {"id": {"type": "integer"}}},
                                        stream=STREAM), stream=STREAM)
    batch = convert(conv, [{"id": 1, "name": "Alice"}])
    assert batch.schema.names[4:] == ["id"]
    assert batch.column("id").to_pylist() == [1]
    assert changes(batch) == [[]]
    nested, record_changes = one({"type": "object", "properties": {"id": {"type": "integer"}}},
                                 {"id": 1, "name": "Alice"})
    assert (nested, record_changes) == ({"id": 1}, [])


@pytest.mark.parametrize("field_schema", [
    {"type": "object"}, {"type": "object", "properties": {}}, {"type": "object", "properties": None}])
def test_objects_without_schema_are_json_text(field_schema):
    text, record_changes = one(field_schema, {"id": 1, "name": "Alice"})
    assert record_changes == []
    assert json.loads(text) == {"id": 1, "name": "Alice"}
    assert text == '{"id":1,"name":"Alice"}'  # keys in the order given, compact
    assert one(field_schema, [1]) == (None, [nulled("f")])  # an array is not an object


def test_json_text_keeps_big_integers_and_unicode():
    text, _ = one({}, {"n": 2 ** 70, "s": "é"})
    assert json.loads(text) == {"n": 2 ** 70, "s": "é"}
    assert one({}, "plain") == ('"plain"', [])


# Array Types (seed table, "Now").
def test_array_of_integers_nulls_the_item_that_does_not_fit():
    assert one({"type": "array", "items": {"type": "integer"}}, [1, "Alice"], name="name") == (
        [1, None], [nulled("name[1]")])


def test_array_without_items_is_json_text():
    text, record_changes = one({"type": "array"}, [1, "Alice"])
    assert (json.loads(text), record_changes) == ([1, "Alice"], [])


def test_array_of_union_holds_mixed_types():
    schema = {"type": "array", "items": {"oneOf": [{"type": "integer"}, {"type": "string"}]}}
    value, record_changes = one(schema, [1, "Alice"], name="name")
    assert record_changes == []
    assert value == [{"type": "integer", "integer": 1, "string": None},
                     {"type": "string", "integer": None, "string": "Alice"}]
    value, record_changes = one(schema, [1, False], name="name")
    assert value == [{"type": "integer", "integer": 1, "string": None}, None]
    assert record_changes == [nulled("name[1]")]


# Union Types (seed table "Following the examples above").
def test_union_values_become_disjoint_records():
    assert one({"oneOf": [{"type": "integer"}, {"type": "string"}]}, 1)[0] == {
        "type": "integer", "integer": 1, "string": None}
    value, record_changes = one({"oneOf": [{"type": "boolean"}, {"type": "object", "properties": {
        "id": {"type": "integer"}, "name": {"type": "string"}}}]}, {"id": 10, "name": "Alice"})
    assert value == {"type": "object", "boolean": None, "object": {"id": 10, "name": "Alice"}}
    assert record_changes == []


@pytest.mark.parametrize("value, member", [
    (3, "integer"), (3.5, "number"), (3.0, "number"), ("x", "string"), (True, "boolean"),
])
def test_union_members_by_json_type(value, member):
    result, record_changes = one({"oneOf": [{"type": "number"}, {"type": "string"}, {"type": "integer"},
                                            {"type": "boolean"}]}, value)
    assert record_changes == []
    assert result["type"] == member and result[member] == value


def test_union_tries_members_of_the_same_json_type_in_order():
    schema = {"oneOf": [{"type": "string", "format": "date"}, {"type": "string"}]}
    assert one(schema, "2024-01-02")[0] == {"type": "date", "date": date(2024, 1, 2), "string": None}
    assert one(schema, "soon")[0] == {"type": "string", "date": None, "string": "soon"}


def test_union_value_that_fits_no_member_is_nulled():
    schema = {"oneOf": [{"type": "integer"}, {"type": "string"}]}
    assert one(schema, {"a": 1}) == (None, [nulled("f")])
    assert one(schema, 2 ** 64) == (None, [nulled("f", SIZE)])
    assert one({"oneOf": [{"type": "integer"}, {"type": "boolean"}]}, "12") == (None, [nulled("f")])


def test_nested_paths_of_changes():
    schema = {"type": "object", "properties": {
        "a": {"type": "object", "properties": {
            "b": {"type": "array", "items": {"type": "object", "properties": {
                "c": {"type": "integer"}, "d": {"type": "array", "items": {"type": "boolean"}}}}}}},
        "u": {"oneOf": [{"type": "string"}, {"type": "object", "properties": {"id": {"type": "integer"}}}]},
    }}
    conv = RecordConverter(parse_schema(schema, stream=STREAM), stream=STREAM)
    records = [
        {"a": {"b": [{"c": 1}, {"c": "x", "d": [True, 0, False, "no"]}]}, "u": {"id": "?"}},
        {"a": {"b": "not a list"}, "u": 5},
        {"a": {"b": [None, 7, {"c": 2 ** 80}]}},
    ]
    batch = convert(conv, records)
    assert changes(batch) == [
        [nulled("a.b[1].c"), nulled("a.b[1].d[1]"), nulled("a.b[1].d[3]"), nulled("u.id")],
        [nulled("a.b"), nulled("u")],
        [nulled("a.b[1]"), nulled("a.b[2].c", SIZE)],
    ]
    assert batch.column("a").to_pylist() == [
        {"b": [{"c": 1, "d": None}, {"c": None, "d": [True, None, False, None]}]},
        {"b": None},
        {"b": [None, None, {"c": None, "d": None}]},
    ]


def test_source_changes_are_carried_first():
    conv = converter({"type": "integer"})
    reported = [{"field": "name", "change": "TRUNCATED", "reason": "SOURCE_FIELD_SIZE_LIMITATION"}]
    batch = convert(conv, [{"f": "x"}, {"f": 1}, {"f": 2}], source_changes=[reported, None, reported])
    assert changes(batch) == [reported + [nulled("f")], [], reported]
    assert conv.last_nulled == 1


def test_envelope_values():
    conv = converter({"type": "integer"})
    batch = convert(conv, [{"f": 1}] * 3)
    ids = batch.column("_airbyte_raw_id").to_pylist()
    assert len(set(ids)) == 3
    for text in ids:
        parsed = uuid.UUID(text)
        assert str(parsed) == text and parsed.version == 4 and parsed.variant == uuid.RFC_4122
    assert batch.column("_airbyte_extracted_at").cast(pa.int64()).to_pylist() == [1_700_000_000_123] * 3
    assert batch.column("_airbyte_generation_id").to_pylist() == [4] * 3
    assert [meta["sync_id"] for meta in batch.column("_airbyte_meta").to_pylist()] == [11] * 3
    assert batch.schema == conv.schema


def test_empty_batch():
    conv = converter({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}})
    batch = convert(conv, [])
    assert batch.num_rows == 0 and batch.schema == conv.schema


def test_records_are_not_changed():
    conv = converter({"type": "object", "properties": {"id": {"type": "integer"}}})
    records = [{"f": {"id": "x", "extra": 1}, "g": [1]}]
    before = copy.deepcopy(records)
    convert(conv, records)
    assert records == before


def test_clean_columns_take_the_fast_path(monkeypatch):
    """Values that fit are converted column-wise: neither the value-by-value path nor Python parsing runs."""
    def refuse(*args):
        raise AssertionError("slow path used")

    monkeypatch.setattr(columns_module, "convert_each", refuse)
    monkeypatch.setattr(columns_module.Mapped, "build", refuse)  # dates and timestamps parsed by Arrow
    schema = {"type": "object", "properties": {
        "ts": {"type": "string", "format": "date-time"}, "d": {"type": "string", "format": "date"},
        "i": {"type": "integer"}, "s": {"type": "string"}, "n": {"type": "number"}, "b": {"type": "boolean"}}}
    conv = RecordConverter(parse_schema(schema, stream=STREAM), stream=STREAM)
    records = [{"ts": "2024-01-01T00:00:00+01:00", "d": "2024-01-01", "i": 1, "s": "a", "n": 1, "b": True},
               {"ts": None, "d": None, "i": None, "s": None, "n": 2.5, "b": None}]
    batch = convert(conv, records)
    assert storage_values(batch.column("ts")) == [1_704_063_600_000_000, None]
    assert storage_values(batch.column("d")) == [19_723, None]
    naive = convert(conv, [{"ts": "2024-01-01T00:00:00"}, {"ts": "2024-01-02"}, {"ts": None}])
    assert storage_values(naive.column("ts")) == [1_704_067_200_000_000, 1_704_153_600_000_000, None]
    with pytest.raises(AssertionError, match="slow path"):
        convert(conv, [{"i": "12"}])
    with pytest.raises(AssertionError, match="slow path"):  # some with a zone, some without: Python
        convert(conv, [{"ts": "2024-01-01T00:00:00"}, {"ts": "2024-01-01T00:00:00Z"}])


def test_object_values_of_dict_subclasses_are_objects():
    from collections import OrderedDict

    value, record_changes = one({"type": "object", "properties": {"id": {"type": "integer"}}},
                                OrderedDict(id=1))
    assert (value, record_changes) == ({"id": 1}, [])


def test_union_of_string_and_schemaless_object_in_parquet_form():
    conv = converter({"oneOf": [{"type": "string"}, {"type": "object"}]})
    assert conv.schema.field("f").type == pa.struct([("type", pa.string()), ("string", pa.string()),
                                                     ("object", pa.string())])
    batch = convert(conv, [{"f": "a"}, {"f": {"k": 1}}, {"f": [1]}])
    assert batch.column("f").to_pylist() == [
        {"type": "string", "string": "a", "object": None},
        {"type": "object", "string": None, "object": '{"k":1}'},
        None,
    ]
    assert changes(batch) == [[], [], [nulled("f")]]


def test_source_changes_must_match_the_records():
    with pytest.raises(ValueError, match="one entry"):
        convert(converter({"type": "integer"}), [{"f": 1}], source_changes=[None, None])
