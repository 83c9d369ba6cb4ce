"""schema_normalization: Default: lossless casts to the schema's types, in place."""

from __future__ import annotations

import math

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
        ("integer", "012", "012"),
        ("integer", "12.5", "12.5"),
        ("integer", "abc", "abc"),
        ("integer", 3.0, 3),
        ("integer", 3.5, 3.5),
        ("integer", True, True),
        ("integer", 12, 12),
        ("number", "1.5", 1.5),
        ("number", "1.50", 1.5),
        ("number", "12", 12),
        ("number", "1e3", 1000.0),
        ("number", "0.12345678901234567890", "0.12345678901234567890"),
        ("number", "1e999", "1e999"),
        ("number", "NaN", "NaN"),
        ("number", 7, 7),
        ("string", 7, "7"),
        ("string", 1.5, "1.5"),
        ("string", False, "false"),
        ("string", {"a": 1}, {"a": 1}),
        ("string", [1], [1]),
        ("boolean", "true", True),
        ("boolean", "FALSE", False),
        ("boolean", "yes", "yes"),
        ("boolean", 1, True),
        ("boolean", 0, False),
        ("boolean", 2, 2),
        (["null", "integer"], None, None),
        (["null", "integer"], "5", 5),
        (["string", "integer"], "5", "5"),
        (["integer", "string"], 5.0, 5),
        (["number", "string"], True, "true"),
        ("object", "x", "x"),
        ("array", "x", "x"),
    ],
)
def test_scalar_casts(types, value, expected):
    result = cast({"type": types}, value)
    assert result == expected
    assert type(result) is type(expected)


def test_nested_objects_and_arrays_are_cast_in_place():
    schema = {"type": "object", "properties": {
        "id": {"type": "integer"},
        "customer": {"type": ["null", "object"], "properties": {"age": {"type": "integer"}}},
        "lines": {"type": "array", "items": {"type": "object", "properties": {"qty": {"type": "number"}}}},
        "tags": {"type": "array", "items": {"type": "string"}},
        "free": {},
    }}
    normalize = compile_normalizer(schema)
    lines = [{"qty": "2"}, {"qty": "x"}, None]
    record = {"id": "1", "customer": {"age": "40", "name": "A"}, "lines": lines, "tags": [1, "b", None],
              "free": "9", "extra": "3"}
    normalize(record)
    assert record == {"id": 1, "customer": {"age": 40, "name": "A"}, "lines": [{"qty": 2}, {"qty": "x"}, None],
                      "tags": ["1", "b", None], "free": "9", "extra": "3"}
    assert record["lines"] is lines


def test_schemas_that_ask_for_nothing_compile_to_none():
    assert compile_normalizer({"type": "object", "properties": {}}) is None
    assert compile_normalizer({"type": "object"}) is None
    assert compile_normalizer({"type": "object", "properties": {"a": {}, "b": {"description": "x"}}}) is None
    assert compile_normalizer({"type": "object", "properties": {"a": {"type": "integer"}}}) is not None


@given(st.integers())
def test_integer_text_round_trips(number):
    assert cast({"type": "integer"}, str(number)) == number
    assert cast({"type": "string"}, number) == str(number)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_number_text_round_trips(number):
    result = cast({"type": "number"}, repr(number))
    assert result == number
    assert cast({"type": "string"}, number) == repr(number)


@given(st.text(max_size=12))
def test_number_casts_never_lose_information(text):
    result = cast({"type": "number"}, text)
    if result is not text:
        assert isinstance(result, (int, float)) and math.isfinite(result)
        from decimal import Decimal
        assert Decimal(text) == Decimal(repr(result))


values = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5)


@given(types=st.lists(st.sampled_from(["null", "string", "integer", "number", "boolean"]), min_size=1,
                      max_size=3, unique=True), value=values)
def test_normalization_is_idempotent(types, value):
    once = cast({"type": types}, value)
    assert cast({"type": types}, once) == once
