"""schema_normalization: Default: Airbyte's casts to the schema's types (Python's str/int/float/bool), in place."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from framework.components.records import compile_cast, compile_normalizer


def cast(schema, value):
    function = compile_cast(schema)
    return value if function is None else function(value)


@pytest.mark.parametrize(
    "types, value, expected",
    [
        ("integer", "12", 12),
        ("integer", "-3", -3),
        ("integer", "012", 12),
        ("integer", " 7 ", 7),
        ("integer", "12.5", "12.5"),
        ("integer", "abc", "abc"),
        ("integer", 3.0, 3),
        ("integer", 3.7, 3),
        ("integer", -3.7, -3),
        ("integer", True, 1),
        ("integer", 12, 12),
        ("integer", None, None),
        ("integer", {"a": 1}, {"a": 1}),
        ("number", "1.5", 1.5),
        ("number", "12", 12.0),
        ("number", 7, 7.0),
        ("number", "1e3", 1000.0),
        ("number", "x", "x"),
        ("number", False, 0.0),
        ("number", None, None),
        ("string", 7, "7"),
        ("string", 1.5, "1.5"),
        ("string", False, "False"),
        ("string", {"a": 1}, "{'a': 1}"),
        ("string", [1], "[1]"),
        ("string", None, "None"),
        ("boolean", "true", True),
        ("boolean", " FALSE ", False),
        ("boolean", "yes", True),
        ("boolean", "off", False),
        ("boolean", "maybe", "maybe"),
        ("boolean", 1, True),
        ("boolean", 0, False),
        ("boolean", 2, True),
        ("boolean", None, False),
        ("boolean", [], False),
        (["null", "integer"], None, None),
        (["null", "integer"], "5", 5),
        (["null", "string"], None, None),
        (["null", "boolean"], None, None),
        (["string", "integer"], "5", "5"),
        (["integer", "string"], 5.0, 5.0),
        ("object", "x", "x"),
        ("array", "x", ["x"]),
        ("array", None, [None]),
        (["array", "null"], None, None),
        (["array", "null"], 3, [3]),
        ({"type": "array", "items": {"type": "string"}}, 3, 3),  # a type name as text: never wraps
        ({"type": "array", "items": {"type": ["string", "null"]}}, 3, ["3"]),
        ({"type": "array", "items": {"type": ["object"]}}, 3, 3),
        ({"type": "array", "items": {"type": ["integer"]}}, {"a": 1}, {"a": 1}),
        ("date", "x", "x"),
    ],
)
def test_scalar_casts(types, value, expected):
    schema = types if isinstance(types, dict) else {"type": types}
    result = cast(schema, value)
    assert result == expected
    assert type(result) is type(expected)


def test_nested_objects_and_arrays_are_cast_in_place():
    schema = {"type": "object", "properties": {
        "id": {"type": "integer"},
        "customer": {"type": ["null", "object"], "properties": {"age": {"type": "integer"}}},
        "lines": {"type": "array", "items": {"type": "object", "properties": {"qty": {"type": "number"}}}},
        "tags": {"type": "array", "items": {"type": "string"}},
        "free": {},
        "absent": {"type": "string"},
    }}
    normalize = compile_normalizer(schema)
    lines = [{"qty": "2"}, {"qty": "x"}, None]
    record = {"id": "1", "customer": {"age": "40", "name": "A"}, "lines": lines, "tags": [1, "b", None],
              "free": "9", "extra": "3"}
    normalize(record)
    assert record == {"id": 1, "customer": {"age": 40, "name": "A"}, "lines": [{"qty": 2.0}, {"qty": "x"}, None],
                      "tags": ["1", "b", "None"], "free": "9", "extra": "3"}
    assert record["lines"] is lines
    assert "absent" not in record  # only keys the record has


def test_a_wrapped_scalar_is_then_cast_as_an_item():
    schema = {"type": "object", "properties": {"ids": {"type": "array", "items": {"type": ["integer", "null"]}}}}
    record = {"ids": "7"}
    compile_normalizer(schema)(record)
    assert record == {"ids": [7]}


def test_schemas_that_ask_for_nothing_compile_to_none():
    assert compile_normalizer({}) is None
    assert compile_normalizer({"type": "object", "properties": {}}) is None
    assert compile_normalizer({"type": "object"}) is None
    assert compile_normalizer({"type": "object", "properties": {"a": {}, "b": {"description": "x"}}}) is None
    assert compile_normalizer({"type": "object", "properties": {"a": {"type": ["string", "integer"]}}}) is None
    assert compile_normalizer({"type": "object", "properties": {"a": {"type": "integer"}}}) is not None


@given(st.integers())
def test_integer_text_round_trips(number):
    assert cast({"type": "integer"}, str(number)) == number
    assert cast({"type": "string"}, number) == str(number)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_number_text_round_trips(number):
    result = cast({"type": "number"}, repr(number))
    assert result == number and type(result) is float
    assert cast({"type": "string"}, number) == str(number)


values = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5)


@given(kind=st.sampled_from(["string", "integer", "number", "boolean"]), value=values)
def test_cast_is_python_conversion_or_nothing(kind, value):
    """Whatever the value, the result is Python's own conversion of it or the value itself; never an error."""
    result = cast({"type": kind}, value)
    python = {"string": str, "integer": int, "number": float, "boolean": bool}[kind]
    if result is value:
        return
    assert type(result) is python
    if kind != "boolean" or not isinstance(value, str):
        expected = python(value)
        assert result == expected or (expected != expected and result != result)  # "NaN" text: NaN either way
