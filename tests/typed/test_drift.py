"""Schema drift: undeclared fields counted under every policy; dropped, kept as JSON text, or typed as columns."""

from __future__ import annotations

import io
import json

import fastavro
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typed.helpers import STREAM, changes, convert, parquet_roundtrip

from framework.typed import RecordConverter, parse_schema
from framework.typed.drift import (
    ADDITIONAL_PROPERTIES,
    Drift,
    check_policy,
    infer_kind,
    kind_of,
    merge_evolved,
    merge_kinds,
)
from framework.typed.errors import SchemaConflictError

SCHEMA = {"type": "object", "properties": {
    "id": {"type": "integer"},
    "address": {"type": "object", "properties": {"city": {"type": "string"}}},
    "items": {"type": "array", "items": {"type": "object", "properties": {"sku": {"type": "string"}}}},
}}
RECORDS = [
    {"id": 1, "address": {"city": "Oslo", "zip": "0150"}, "priority": 3},
    {"id": 2, "items": [{"sku": "a", "qty": 2}, {"sku": "b"}], "priority": 2.5, "note": {"x": [1]}},
    {"id": 3},
]


def conv(policy: str = "drop", evolved=()) -> RecordConverter:
    return RecordConverter(parse_schema(SCHEMA, stream=STREAM), stream=STREAM, drift=policy, evolved=evolved)


def declared_part(batch: pa.RecordBatch) -> list[dict]:
    return [{k: row[k] for k in ("id", "address", "items")} for row in batch.to_pylist()]


@pytest.mark.parametrize("policy", ["drop", "keep", "evolve"])
def test_every_policy_counts_the_undeclared_fields_by_path_and_the_records_that_had_one(policy):
    converter = conv(policy)
    batch = convert(converter, RECORDS)
    assert converter.last_drift.records == 2
    assert converter.last_drift.fields == {"priority": 2, "note": 1, "address.zip": 1, "items[].qty": 1}
    assert changes(batch) == [[], [], []]  # never in _airbyte_meta: the seed rules that
    assert declared_part(batch) == declared_part(convert(conv("drop"), RECORDS))


def test_drop_writes_exactly_the_seeds_columns():
    converter = conv("drop")
    batch = convert(converter, RECORDS)
    assert batch.schema.equals(RecordConverter(parse_schema(SCHEMA, stream=STREAM), stream=STREAM).schema)
    assert batch.schema.names[4:] == ["id", "address", "items"]


def test_records_with_declared_fields_only_count_nothing():
    converter = conv("keep")
    batch = convert(converter, [{"id": 1, "address": {"city": "a"}}, {}])
    assert not converter.last_drift and converter.last_drift.fields == {}
    assert batch.column(ADDITIONAL_PROPERTIES).to_pylist() == [None, None]


def test_keep_adds_one_string_column_with_each_records_undeclared_fields_as_json_where_they_sat():
    batch = convert(conv("keep"), RECORDS)
    assert batch.schema.names[-1] == ADDITIONAL_PROPERTIES
    assert batch.schema.field(ADDITIONAL_PROPERTIES).type == pa.string()
    kept = [None if text is None else json.loads(text) for text in batch.column(ADDITIONAL_PROPERTIES).to_pylist()]
    assert kept == [{"priority": 3, "address.zip": "0150"},
                    {"priority": 2.5, "note": {"x": [1]}, "items[0].qty": 2}, None]


def test_keep_refuses_a_schema_that_declares_its_column():
    schema = {"type": "object", "properties": {ADDITIONAL_PROPERTIES: {"type": "string"}}}
    with pytest.raises(SchemaConflictError, match="keep policy"):
        RecordConverter(parse_schema(schema, stream=STREAM), stream=STREAM, drift="keep")


def test_evolve_adds_typed_columns_after_the_declared_ones_in_the_order_first_met():
    converter = conv("evolve")
    batch = convert(converter, RECORDS)
    assert batch.schema.names[4:] == ["id", "address", "items", "priority", "note"]
    assert batch.schema.field("priority").type == pa.float64()  # 3 and 2.5: number
    assert batch.column("priority").to_pylist() == [3.0, 2.5, None]
    assert batch.column("note").to_pylist() == [None, '{"x":[1]}', None]  # objects as JSON text
    assert converter.evolved == {"priority": "number", "note": "string"}
    assert converter.schema.equals(batch.schema)


def test_evolve_keeps_the_schema_while_a_page_brings_nothing_new_and_widens_a_kind_on_conflict():
    converter = conv("evolve")
    first = convert(converter, [{"id": 1, "priority": 1}])
    assert first.schema.field("priority").type == pa.int64()
    schema = converter.schema
    same = convert(converter, [{"id": 2, "priority": 7}, {"id": 3}])
    assert converter.schema is schema and same.schema.equals(first.schema)
    wider = convert(converter, [{"id": 4, "priority": "high"}, {"id": 5, "priority": 2}])
    assert wider.schema.field("priority").type == pa.string()
    assert wider.column("priority").to_pylist() == ["high", "2"]
    assert changes(wider) == [[], []]  # widened, never nulled


def test_evolve_starts_from_the_columns_recorded_by_earlier_syncs():
    converter = conv("evolve", evolved=(("priority", "integer"),))
    batch = convert(converter, [{"id": 1}])
    assert batch.schema.names[-1] == "priority" and batch.schema.field("priority").type == pa.int64()
    assert batch.column("priority").to_pylist() == [None]


def test_a_recorded_column_the_schema_now_declares_is_typed_as_declared():
    converter = conv("evolve", evolved=(("id", "string"), ("priority", "integer")))
    batch = convert(converter, [{"id": 1, "priority": 2}])
    assert batch.schema.names[4:] == ["id", "address", "items", "priority"]
    assert batch.schema.field("id").type == pa.int64()


def test_evolve_leaves_airbytes_names_and_nested_fields_out():
    converter = conv("evolve")
    batch = convert(converter, [{"id": 1, "_airbyte_raw_id": "x", "_airbyte_data": 1, "address": {"zip": "1"}}])
    assert batch.schema.names[4:] == ["id", "address", "items"]
    assert converter.last_drift.fields == {"_airbyte_raw_id": 1, "_airbyte_data": 1, "address.zip": 1}


def test_a_stream_landed_whole_has_no_drift_and_keep_still_has_its_column():
    converter = RecordConverter(parse_schema({"type": "object"}, stream=STREAM), stream=STREAM, drift="keep")
    batch = convert(converter, [{"anything": 1}])
    assert not converter.last_drift
    assert batch.schema.names[4:] == ["_airbyte_data", ADDITIONAL_PROPERTIES]
    evolving = RecordConverter(parse_schema({"type": "object"}, stream=STREAM), stream=STREAM, drift="evolve")
    assert convert(evolving, [{"anything": 1}]).schema.names[4:] == ["_airbyte_data"]


@pytest.mark.parametrize("policy", ["keep", "evolve"])
def test_the_files_of_keep_and_evolve_are_valid_parquet_and_avro(policy):
    converter = conv(policy)
    batch = convert(converter, RECORDS)
    assert parquet_roundtrip(batch).read().schema.names == batch.schema.names
    sink = io.BytesIO()
    fastavro.writer(sink, converter.avro.schema, converter.to_avro_records(batch))
    sink.seek(0)
    rows = list(fastavro.reader(sink))
    assert [row["id"] for row in rows] == [1, 2, 3]
    extra = ADDITIONAL_PROPERTIES if policy == "keep" else "priority"
    assert [row[extra] is not None for row in rows] == [True, True, False]


def test_an_unknown_policy_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="drop, keep, evolve"):
        check_policy("merge", "stream 'events'")
    with pytest.raises(ValueError, match="drop, keep, evolve"):
        conv("merge")


# ------------------------------------------------------------------ inference

json_scalars = (st.none() | st.booleans() | st.integers(-(2 ** 70), 2 ** 70)
                | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=5))
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=6)


def test_kinds_of_single_values():
    assert [kind_of(v) for v in (None, True, 1, 2 ** 64, 1.5, "a", {}, [])] == [
        None, "boolean", "integer", "string", "number", "string", "string", "string"]


@given(st.lists(json_values, max_size=20))
def test_inferring_a_column_is_merging_the_kinds_of_its_values(values):
    expected = None
    for value in values:
        expected = merge_kinds(expected, kind_of(value))
    assert infer_kind(values) == expected


@given(st.sampled_from([None, "boolean", "integer", "number", "string"]),
       st.sampled_from([None, "boolean", "integer", "number", "string"]),
       st.sampled_from([None, "boolean", "integer", "number", "string"]))
def test_merging_kinds_is_commutative_associative_and_only_widens(a, b, c):
    assert merge_kinds(a, b) == merge_kinds(b, a)
    assert merge_kinds(merge_kinds(a, b), c) == merge_kinds(a, merge_kinds(b, c))
    if a is not None and b is not None:
        assert merge_kinds(a, b) in {a, b, "number", "string"}
        assert merge_kinds(a, merge_kinds(a, b)) == merge_kinds(a, b)


@settings(deadline=None, max_examples=60)
@given(st.lists(st.dictionaries(st.sampled_from(["id", "p", "q", "r"]), json_values, max_size=4), max_size=12))
def test_evolve_never_nulls_an_undeclared_value_and_keep_holds_them_all(records):
    evolving, keeping = conv("evolve"), conv("keep")
    evolved, kept = convert(evolving, records), convert(keeping, records)
    kept_values = [json.loads(t) if t else {} for t in kept.column(ADDITIONAL_PROPERTIES).to_pylist()]
    for row, record in enumerate(records):
        undeclared = {k: v for k, v in record.items() if k != "id"}
        assert kept_values[row] == json.loads(json.dumps(undeclared))
        for key, value in undeclared.items():
            if key not in evolved.schema.names:  # a field only ever null: no kind, no column, nothing lost
                assert all(r.get(key) is None for r in records)
                continue
            assert (evolved.column(key)[row].as_py() is None) == (value is None)
    assert all(not c or all(ch["field"] == "id" for ch in c) for c in changes(evolved))
    assert evolving.last_drift.records == sum(1 for r in records if set(r) - {"id"})


def test_drifts_add_up_and_read_back():
    total = Drift()
    total.add(Drift({"a": 1}, 1))
    total.add(Drift({"a": 2, "b.c": 1}, 2))
    assert total.as_dict() == {"records": 3, "fields": {"a": 3, "b.c": 1}}
    assert Drift.of(total.as_dict()).as_dict() == total.as_dict()


def test_evolved_columns_merge_in_order_and_widen():
    assert merge_evolved((("a", "integer"), ("b", "boolean")), (("c", "string"), ("a", "number"))) == (
        ("a", "number"), ("b", "boolean"), ("c", "string"))


records_with_extras = st.lists(st.fixed_dictionaries(
    {"id": st.integers(0, 9)},
    optional={"x": json_scalars, "y": json_scalars,
              "address": st.none() | st.dictionaries(st.sampled_from(["city", "zip", "po"]), json_scalars, max_size=3),
              "items": st.none() | st.lists(st.dictionaries(st.sampled_from(["sku", "qty"]), json_scalars,
                                                            max_size=2), max_size=3)}), max_size=10)


@settings(deadline=None, max_examples=80)
@given(records_with_extras, st.sampled_from(["drop", "keep", "evolve"]))
def test_the_counts_are_those_of_a_plain_walk_over_the_records(records, policy):
    expected: dict[str, int] = {}
    drifted = 0
    for record in records:
        found = [key for key in record if key not in ("id", "address", "items")]
        found += [f"address.{key}" for key in (record.get("address") or {}) if key != "city"]
        found += [f"items[].{key}" for item in (record.get("items") or []) for key in item if key != "sku"]
        for path in found:
            expected[path] = expected.get(path, 0) + 1
        drifted += bool(found)
    converter = conv(policy)
    convert(converter, records)
    assert (converter.last_drift.fields, converter.last_drift.records) == (expected, drifted)
