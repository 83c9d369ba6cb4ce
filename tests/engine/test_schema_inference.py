"""A stream's schema inferred from records, and merged into the declared one without dropping anything."""

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.engine.schema_inference import infer_schema, merge_schema

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=False,
                    allow_infinity=False), st.text(max_size=8),
                    st.sampled_from(["2024-01-31T12:00:00Z", "2024-01-31", "12:30:00", "2024-01-31 12:00:00"]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                        st.dictionaries(st.sampled_from("abc"), inner, max_size=3)),
                      max_leaves=6)
records = st.lists(st.dictionaries(st.sampled_from(["id", "name", "when", "tags", "meta"]), values, max_size=5),
                   min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(records)
def test_every_record_read_is_valid_under_the_inferred_schema(rows):
    schema = infer_schema(rows)
    for row in rows:
        jsonschema.validate(row, schema)
    assert set(schema["properties"]) == set().union(*rows)


@settings(max_examples=60, deadline=None)
@given(records, records)
def test_a_later_record_with_nulls_or_missing_fields_stays_valid(first, later):
    schema = infer_schema(first + later)
    nulled = {name: None for name in schema["properties"]}
    jsonschema.validate(nulled, schema)
    jsonschema.validate({}, schema)  # nothing required


def test_temporal_strings_get_their_format_and_mixed_strings_none():
    schema = infer_schema([{"at": "2024-01-31T12:00:00Z", "day": "2024-01-31", "clock": "12:30",
                            "local": "2024-01-31 12:00:00", "mixed": "2024-01-31"},
                           {"mixed": "soon"}])["properties"]
    assert schema["at"] == {"type": ["null", "string"], "format": "date-time"}
    assert schema["day"]["format"] == "date" and schema["clock"]["format"] == "time"
    assert schema["local"]["airbyte_type"] == "timestamp_without_timezone"
    assert "format" not in schema["mixed"]


def test_integers_and_floats_widen_to_number_and_nested_objects_nest():
    schema = infer_schema([{"n": 1, "o": {"a": 1}}, {"n": 1.5, "o": {"b": [True]}}])["properties"]
    assert schema["n"]["type"] == ["null", "number"]
    assert set(schema["o"]["properties"]) == {"a", "b"}
    assert schema["o"]["properties"]["b"]["items"]["type"] == ["null", "boolean"]


DECLARED = {"type": "object", "description": "kept", "properties": {
    "id": {"type": "integer", "description": "the id"},
    "meta": {"type": ["null", "object"], "properties": {"a": {"type": "string"}}},
    "tags": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "string"}}}}}}


def test_the_merge_keeps_every_declared_keyword_and_adds_what_is_missing_at_every_depth():
    inferred = infer_schema([{"id": "not an integer", "meta": {"a": "x", "b": 1}, "tags": [{"x": "1", "y": 2}],
                              "new": True}])
    merged, added = merge_schema(DECLARED, inferred)
    assert added == ["meta.b", "tags.[].y", "new"]
    assert merged["description"] == "kept" and merged["properties"]["id"] == DECLARED["properties"]["id"]
    assert merged["properties"]["meta"]["properties"]["a"] == {"type": "string"}
    assert merged["properties"]["new"] == {"type": ["null", "boolean"]}
    assert "y" in merged["properties"]["tags"]["items"]["properties"]
    assert DECLARED["properties"]["meta"]["properties"] == {"a": {"type": "string"}}  # not changed in place


def test_nothing_declared_takes_the_inferred_schema_whole():
    inferred = infer_schema([{"a": 1}])
    assert merge_schema({}, inferred) == (inferred, ["a"])
    assert merge_schema(inferred, inferred) == (inferred, [])
