"""parse_schema: JSON Schema to field types, unions merged as the seed says."""

from __future__ import annotations

import pytest

from framework.errors import ConfigError, FrameworkError
from framework.typed import SchemaConflictError, parse_schema
from framework.typed.types import (
    BOOLEAN,
    DATE,
    INTEGER,
    NUMBER,
    STRING,
    TIME_WITH_TZ,
    TIME_WITHOUT_TZ,
    TIMESTAMP_WITH_TZ,
    TIMESTAMP_WITHOUT_TZ,
    UNKNOWN,
    UNKNOWN_ARRAY,
    UNKNOWN_OBJECT,
    Array,
    Object,
    Union,
)


def parse(schema):
    return parse_schema(schema, stream="users")


@pytest.mark.parametrize("schema, expected", [
    ({"type": "string"}, STRING),
    ({"type": "boolean"}, BOOLEAN),
    ({"type": "integer"}, INTEGER),
    ({"type": "number"}, NUMBER),
    ({"type": "number", "airbyte_type": "integer"}, INTEGER),
    ({"type": ["null", "string"]}, STRING),
    ({"type": ["string", "null"]}, STRING),
    ({"type": "string", "format": "date"}, DATE),
    ({"type": "string", "format": "time"}, TIME_WITH_TZ),
    ({"type": "string", "format": "time", "airbyte_type": "time_with_timezone"}, TIME_WITH_TZ),
    ({"type": "string", "format": "time", "airbyte_type": "time_without_timezone"}, TIME_WITHOUT_TZ),
    ({"type": "string", "format": "date-time"}, TIMESTAMP_WITH_TZ),
    ({"type": "string", "format": "date-time", "airbyte_type": "timestamp_with_timezone"}, TIMESTAMP_WITH_TZ),
    ({"type": "string", "format": "date-time", "airbyte_type": "timestamp_without_timezone"}, TIMESTAMP_WITHOUT_TZ),
    ({"type": ["null", "string"], "format": "date-time"}, TIMESTAMP_WITH_TZ),
    ({"type": "string", "format": "email"}, STRING),
    ({"type": "string", "airbyte_type": "timestamp_without_timezone"}, STRING),  # format decides
    ({"$ref": "WellKnownTypes.json#/definitions/TimestampWithTimezone"}, TIMESTAMP_WITH_TZ),
    ({"$ref": "WellKnownTypes.json#/definitions/Date"}, DATE),
    ({"$ref": "WellKnownTypes.json#/definitions/Integer"}, INTEGER),
])
def test_primitive_types(schema, expected):
    assert parse(schema) == expected


@pytest.mark.parametrize("schema, expected", [
    ({"type": "object"}, UNKNOWN_OBJECT),
    ({"type": "object", "properties": {}}, UNKNOWN_OBJECT),
    ({"type": "object", "properties": None}, UNKNOWN_OBJECT),
    ({"type": ["null", "object"]}, UNKNOWN_OBJECT),
    ({"type": "array"}, UNKNOWN_ARRAY),
    ({"type": "array", "items": []}, UNKNOWN_ARRAY),
    ({}, UNKNOWN),
    ({"description": "no type"}, UNKNOWN),
    ({"type": "null"}, UNKNOWN),
    ({"type": "something-else"}, UNKNOWN),
    ({"$ref": "#/definitions/unresolved"}, UNKNOWN),
    (True, UNKNOWN),
])
def test_schemaless_parts_are_unknown(schema, expected):
    assert parse(schema) == expected


def test_objects_keep_properties_in_schema_order_and_nest():
    schema = {"type": "object", "properties": {
        "z": {"type": "integer"},
        "a": {"type": "object", "properties": {"b": {"type": "string"}, "c": {"type": "object"}}},
        "m": {"type": "array", "items": {"type": "number"}},
    }}
    assert parse(schema) == Object((
        ("z", INTEGER),
        ("a", Object((("b", STRING), ("c", UNKNOWN_OBJECT)))),
        ("m", Array(NUMBER)),
    ))


def test_properties_without_type_mean_an_object_and_items_an_array():
    assert parse({"properties": {"id": {"type": "integer"}}}) == Object((("id", INTEGER),))
    assert parse({"items": {"type": "integer"}}) == Array(INTEGER)


def test_array_of_anything_is_an_array_of_json_text_and_tuple_items_are_a_union():
    assert parse({"type": "array", "items": {}}) == Array(UNKNOWN)
    assert parse({"type": "array", "items": [{"type": "integer"}, {"type": "string"}]}) == Array(
        Union((INTEGER, STRING)))


@pytest.mark.parametrize("schema, expected", [
    ({"oneOf": [{"type": "integer"}, {"type": "string"}]}, Union((INTEGER, STRING))),
    ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, Union((INTEGER, STRING))),
    ({"type": ["integer", "string"]}, Union((INTEGER, STRING))),
    ({"type": ["null", "integer", "string"]}, Union((INTEGER, STRING))),
    # Merging like options (seed table): a single option left is that type.
    ({"oneOf": [{"type": "integer"}, {"type": "integer"}]}, INTEGER),
    ({"oneOf": [{"type": "integer"}, {"type": "string"}, {"type": "integer"}]}, Union((INTEGER, STRING))),
    ({"oneOf": [{"type": "null"}, {"type": "integer"}]}, INTEGER),
    ({"oneOf": [{"type": "string"}, {"type": "string", "format": "date"}]}, Union((STRING, DATE))),
    ({"oneOf": [{"type": "integer"}, {}]}, UNKNOWN),  # an option that takes anything
    ({"oneOf": [{"type": "object"}, {"type": "object", "properties": {"id": {"type": "integer"}}}]},
     UNKNOWN_OBJECT),
    ({"oneOf": [{"type": "integer"}, {"oneOf": [{"type": "string"}, {"type": "integer"}]}]},
     Union((INTEGER, STRING))),
])
def test_unions(schema, expected):
    assert parse(schema) == expected


def test_union_of_boolean_and_object_from_the_seed():
    schema = {"oneOf": [{"type": "boolean"}, {"type": "object", "properties": {
        "id": {"type": "integer"}, "name": {"type": "string"}}}]}
    assert parse(schema) == Union((BOOLEAN, Object((("id", INTEGER), ("name", STRING)))))


def test_array_of_union_holds_mixed_types():
    schema = {"type": "array", "items": {"oneOf": [{"type": "integer"}, {"type": "string"}]}}
    assert parse(schema) == Array(Union((INTEGER, STRING)))


# Unions of objects (seed table): merged properties, or a failure for contradicting types.
@pytest.mark.parametrize("first, second, merged", [
    ({"id": {"type": "integer"}}, {"name": {"type": "string"}}, (("id", INTEGER), ("name", STRING))),
    ({"id": {"type": "integer"}, "name": {"type": "string"}},
     {"id": {"type": "integer"}, "birthday": {"type": "string", "format": "date"}},
     (("id", INTEGER), ("name", STRING), ("birthday", DATE))),
    ({"id": {"type": "integer"}}, {"id": {"type": ["null", "integer"]}}, (("id", INTEGER),)),
    ({"a": {"type": "object", "properties": {"x": {"type": "integer"}}}},
     {"a": {"type": "object", "properties": {"y": {"type": "string"}}}},
     (("a", Object((("x", INTEGER), ("y", STRING)))),)),
])
def test_unions_of_objects_merge(first, second, merged):
    schema = {"oneOf": [{"type": "object", "properties": first}, {"type": "object", "properties": second}]}
    assert parse(schema) == Object(merged)


def test_contradicting_field_types_fail_naming_stream_field_and_types():
    schema = {"type": "object", "properties": {"owner": {"oneOf": [
        {"type": "object", "properties": {"id": {"type": "integer"}}},
        {"type": "object", "properties": {"id": {"type": "string"}}},
    ]}}}
    with pytest.raises(SchemaConflictError) as caught:
        parse_schema(schema, stream="accounts")
    error = caught.value
    assert isinstance(error, ConfigError) and isinstance(error, FrameworkError)
    assert (error.stream, error.field, error.first, error.second) == ("accounts", "owner.id", "integer", "string")
    message = str(error)
    assert "accounts" in message and "owner.id" in message and "integer" in message and "string" in message


def test_conflict_inside_array_items_names_the_item_path():
    schema = {"type": "object", "properties": {"tags": {"type": "array", "items": {"anyOf": [
        {"type": "object", "properties": {"v": {"type": "number"}}},
        {"type": "object", "properties": {"v": {"type": "boolean"}}},
    ]}}}}
    with pytest.raises(SchemaConflictError) as caught:
        parse(schema)
    assert caught.value.field == "tags[].v"


def test_unions_of_arrays_with_different_items_are_not_supported():
    schema = {"oneOf": [{"type": "array", "items": {"type": "integer"}},
                        {"type": "array", "items": {"type": "string"}}]}
    with pytest.raises(SchemaConflictError):
        parse(schema)
    same = {"oneOf": [{"type": "array", "items": {"type": "integer"}},
                      {"type": "array", "items": {"type": "integer"}}]}
    assert parse(same) == Array(INTEGER)


def test_types_are_frozen_and_union_equality_ignores_order():
    assert Union((INTEGER, STRING)) == Union((STRING, INTEGER))
    assert hash(Union((INTEGER, STRING))) == hash(Union((STRING, INTEGER)))
    with pytest.raises(AttributeError):
        Object((("a", INTEGER),)).properties = ()  # type: ignore[misc]
