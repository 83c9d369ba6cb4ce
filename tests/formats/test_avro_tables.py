"""Avro files back as Arrow (framework/formats/avro_tables.py): spark-avro's types, union members, merged schemas."""

from __future__ import annotations

import io
from datetime import date, datetime, time, timezone
from decimal import Decimal
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.errors import ConfigError
from framework.formats.avro_tables import arrow_type, avro_batches, avro_keys, merged_schema, writer_schema


def record(name: str, fields: list[tuple[str, Any]]) -> dict:
    return {"type": "record", "name": name, "fields": [{"name": n, "type": t} for n, t in fields]}


def avro_file(schema: dict, rows: list[dict], codec: str = "null") -> bytes:
    sink = io.BytesIO()
    fastavro.writer(sink, fastavro.parse_schema(schema), rows, codec=codec)
    return sink.getvalue()


def read(schema: dict, rows: list[dict], arrow: pa.Schema | None = None) -> list[dict]:
    arrow = arrow or merged_schema([schema])
    return pa.Table.from_batches(list(avro_batches(io.BytesIO(avro_file(schema, rows)), arrow)), arrow).to_pylist()


@pytest.mark.parametrize("avro, expected", [
    ("boolean", pa.bool_()), ("int", pa.int32()), ("long", pa.int64()), ("float", pa.float32()),
    ("double", pa.float64()), ("string", pa.string()), ("bytes", pa.binary()),
    ({"type": "string", "logicalType": "uuid"}, pa.string()),
    ({"type": "int", "logicalType": "date"}, pa.date32()),
    ({"type": "long", "logicalType": "time-micros"}, pa.time64("us")),
    ({"type": "int", "logicalType": "time-millis"}, pa.time64("us")),
    ({"type": "long", "logicalType": "timestamp-millis"}, pa.timestamp("ms", tz="UTC")),
    ({"type": "long", "logicalType": "timestamp-micros"}, pa.timestamp("us", tz="UTC")),
    ({"type": "long", "logicalType": "local-timestamp-micros"}, pa.timestamp("us")),
    ({"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}, pa.decimal128(10, 2)),
    ({"type": "enum", "name": "e", "symbols": ["A", "B"]}, pa.string()),
    ({"type": "fixed", "name": "f", "size": 4}, pa.binary()),
    ({"type": "array", "items": ["null", "long"]}, pa.list_(pa.field("element", pa.int64()))),
    ({"type": "map", "values": "string"}, pa.map_(pa.string(), pa.string())),
    (["null", "string"], pa.string()),
    (["null", "int", "long"], pa.int64()),  # spark-avro widens these two
    (["null", "float", "double"], pa.float64()),
    (["null", "long", "string"], pa.struct([("member0", pa.int64()), ("member1", pa.string())])),
    (record("r", [("a", "long"), ("b", ["null", "string"])]), pa.struct([("a", pa.int64()), ("b", pa.string())])),
])
def test_avro_types_map_as_spark_avro_maps_them(avro, expected):
    assert arrow_type(avro) == expected


def test_a_named_type_used_again_is_the_type_it_names():
    inner = record("point", [("x", "long")])
    schema = record("top", [("a", inner), ("b", ["null", "point"])])
    assert merged_schema([schema]).field("b").type == pa.struct([("x", pa.int64())])
    assert read(schema, [{"a": {"x": 1}, "b": {"x": 2}}, {"a": {"x": 3}, "b": None}]) == [
        {"a": {"x": 1}, "b": {"x": 2}}, {"a": {"x": 3}, "b": None}]


def test_an_undefined_name_is_refused_with_its_name():
    with pytest.raises(ConfigError, match="`nowhere` is not defined"):
        arrow_type("nowhere")


def test_files_whose_schema_grew_merge_into_one_table_older_files_null_in_new_columns():
    old = record("things", [("id", "long"), ("name", ["null", "string"])])
    new = record("things", [("id", "long"), ("name", ["null", "string"]), ("priority", ["null", "long"])])
    merged = merged_schema([old, new])
    assert merged.names == ["id", "name", "priority"]
    assert read(old, [{"id": 1, "name": "a"}], merged) == [{"id": 1, "name": "a", "priority": None}]
    assert read(new, [{"id": 2, "name": None, "priority": 5}], merged) == [{"id": 2, "name": None, "priority": 5}]


def test_a_schema_that_is_not_a_record_is_refused():
    with pytest.raises(ConfigError, match="not a record"):
        merged_schema([{"type": "array", "items": "long"}])


def test_logical_values_come_back_as_their_arrow_values():
    schema = record("r", [
        ("id", {"type": "string", "logicalType": "uuid"}),
        ("at", {"type": "long", "logicalType": "timestamp-millis"}),
        ("day", ["null", {"type": "int", "logicalType": "date"}]),
        ("clock", ["null", {"type": "long", "logicalType": "time-micros"}]),
        ("money", {"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 2}),
        ("tags", {"type": "map", "values": "long"}),
    ])
    at = datetime(2024, 1, 2, 3, 4, 5, 6000, tzinfo=timezone.utc)
    row = read(schema, [{"id": "0f8fad5b-d9cb-469f-a165-70867728950e", "at": at, "day": date(2024, 3, 5),
                         "clock": time(13, 0, 0, 7), "money": Decimal("12.34"), "tags": {"a": 1}}])[0]
    assert row == {"id": "0f8fad5b-d9cb-469f-a165-70867728950e", "at": at, "day": date(2024, 3, 5),
                   "clock": time(13, 0, 0, 7), "money": Decimal("12.34"), "tags": [("a", 1)]}


BRANCHES: list[tuple[Any, Any]] = [
    ("long", st.integers(-(2 ** 63), 2 ** 63 - 1)),
    ("string", st.text(max_size=5)),
    ("boolean", st.booleans()),
    ("double", st.floats(allow_nan=False)),
    ({"type": "array", "items": "long"}, st.lists(st.integers(-5, 5), max_size=3)),
    ({"type": "int", "logicalType": "date"}, st.dates(date(1900, 1, 1), date(2200, 1, 1))),
    (record("obj", [("k", "long")]), st.builds(lambda k: {"k": k}, st.integers(-5, 5))),
]
_NAMES = ["long", "string", "boolean", "double", "array", "int", "obj"]  # fastavro's names of the branches


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), *(st.tuples(st.just(i), values) for i, (_, values) in enumerate(BRANCHES))),
                max_size=12))
def test_a_union_value_lands_in_the_member_of_the_branch_it_was_written_as(values):
    schema = record("r", [("u", ["null", *(avro for avro, _ in BRANCHES)])])
    written = [{"u": None if v is None else (_NAMES[v[0]], v[1])} for v in values]
    rows = read(schema, written)
    assert len(rows) == len(values)
    for row, value in zip(rows, values):
        if value is None:
            assert row["u"] is None
            continue
        branch, expected = value
        set_members = [name for name, member in row["u"].items() if member is not None]
        assert set_members == [f"member{branch}"]
        assert row["u"][f"member{branch}"] == expected


def test_the_header_alone_gives_the_writer_schema_and_keys_skip_hidden_and_internal_files():
    schema = record("r", [("id", "long")])
    assert writer_schema(io.BytesIO(avro_file(schema, [{"id": 1}], codec="deflate")))["name"] == "r"
    assert avro_keys(["b/2.avro", "a/1.avro", "a/.tmp.avro", "_airbyte_state/x.avro", "a/.hidden/3.avro",
                      "a/notes.json", "top.avro"]) == ["a/1.avro", "b/2.avro", "top.avro"]


def test_big_files_come_in_batches_of_the_size_asked():
    schema = record("r", [("id", "long")])
    batches = list(avro_batches(io.BytesIO(avro_file(schema, [{"id": i} for i in range(25)])),
                                merged_schema([schema]), rows=10))
    assert [b.num_rows for b in batches] == [10, 10, 5]
    assert [i for b in batches for i in b.column("id").to_pylist()] == list(range(25))
